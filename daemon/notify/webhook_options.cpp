#include "daemon/notify/webhook_options.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "daemon/config/config_fields.h"

namespace jobctl::daemon::notify {

using namespace config_fields;

Status apply_webhook_config(const nlohmann::json& root, WebhookOptions& o) {
  auto it = root.find("webhooks");
  if (it == root.end()) return {};
  const std::string p = "webhooks";
  if (auto st = only(*it, {"max_attempts", "retry_initial_s", "retry_max_s", "timeout_s", "allow_private_addresses",
                           "max_webhooks_per_user", "keep_deliveries", "connect_timeout_s", "max_concurrent",
                           "max_concurrent_per_user"}, p);
      !st)
    return st;
  if (auto st = read_int(*it, "max_attempts", p, o.max_attempts); !st) return st;
  if (auto st = read_number(*it, "retry_initial_s", p, o.retry_initial_s); !st) return st;
  if (auto st = read_number(*it, "retry_max_s", p, o.retry_max_s); !st) return st;
  if (auto st = read_number(*it, "timeout_s", p, o.timeout_s); !st) return st;
  if (auto st = read_number(*it, "connect_timeout_s", p, o.connect_timeout_s); !st) return st;
  if (auto st = read_int(*it, "max_concurrent", p, o.max_concurrent); !st) return st;
  if (auto st = read_int(*it, "max_concurrent_per_user", p, o.max_concurrent_per_user); !st) return st;
  if (auto st = read_bool(*it, "allow_private_addresses", p, o.allow_private_addresses); !st) return st;
  if (auto st = read_int(*it, "max_webhooks_per_user", p, o.max_webhooks_per_user); !st) return st;
  if (auto st = read_int(*it, "keep_deliveries", p, o.keep_deliveries); !st) return st;
  if (o.max_attempts < 1 || o.max_attempts > 100) return bad("webhooks.max_attempts", "must be from 1 to 100");
  if (!(o.retry_initial_s > 0) || o.retry_initial_s > 86400) return bad("webhooks.retry_initial_s", "must be above 0 and at most 86400");
  if (!(o.retry_max_s >= o.retry_initial_s) || o.retry_max_s > 7 * 86400)
    return bad("webhooks.retry_max_s", "must be at least retry_initial_s and at most 604800");
  if (!(o.timeout_s > 0) || o.timeout_s > 300) return bad("webhooks.timeout_s", "must be above 0 and at most 300");
  if (!(o.connect_timeout_s > 0) || o.connect_timeout_s > 300)
    return bad("webhooks.connect_timeout_s", "must be above 0 and at most 300");
  if (o.max_concurrent < 1 || o.max_concurrent > 256) return bad("webhooks.max_concurrent", "must be from 1 to 256");
  if (o.max_concurrent_per_user < 1 || o.max_concurrent_per_user > o.max_concurrent)
    return bad("webhooks.max_concurrent_per_user", "must be at least 1 and at most max_concurrent");
  if (o.max_webhooks_per_user < 1) return bad("webhooks.max_webhooks_per_user", "must be at least 1");
  if (o.keep_deliveries < 1) return bad("webhooks.keep_deliveries", "must be at least 1");
  return {};
}

int64_t retry_delay_ms(const WebhookOptions& o, int attempts) {
  const double s = o.retry_initial_s * std::pow(3.0, std::max(0, attempts - 1));
  return static_cast<int64_t>(std::llround(std::min(s, o.retry_max_s) * 1000.0));
}

}  // namespace jobctl::daemon::notify
