#include "daemon/auth/auth_options.h"

#include <nlohmann/json.hpp>

#include "daemon/config/config_fields.h"

namespace jobctl::daemon::auth {

using nlohmann::json;

using config_fields::bad;
using config_fields::only;
using config_fields::read_bool;
using config_fields::read_int;
using config_fields::read_number;

Status apply_security_config(const json& root, SecurityOptions& o) {
  if (!root.is_object()) return {};
  if (auto it = root.find("auth"); it != root.end()) {
    if (auto st = only(*it, {"enabled"}, "auth"); !st) return st;
    if (auto st = read_bool(*it, "enabled", "auth", o.auth.enabled); !st) return st;
  }
  if (auto it = root.find("limits"); it != root.end()) {
    const json& l = *it;
    if (auto st = only(l, {"requests_per_s", "burst", "worker_requests_per_s",
                           "max_waiting_jobs_per_user", "monthly_budget_usd", "user_budgets_usd", "over_budget"},
                       "limits");
        !st)
      return st;
    Status st;
    if (st = read_number(l, "requests_per_s", "limits", o.limits.requests_per_s); !st) return st;
    if (st = read_number(l, "burst", "limits", o.limits.burst); !st) return st;
    if (st = read_number(l, "worker_requests_per_s", "limits", o.limits.worker_requests_per_s); !st) return st;
    if (st = read_int(l, "max_waiting_jobs_per_user", "limits", o.limits.max_waiting_jobs_per_user); !st) return st;
    if (st = read_number(l, "monthly_budget_usd", "limits", o.limits.monthly_budget_usd); !st) return st;
    if (auto p = l.find("over_budget"); p != l.end()) {
      if (!p->is_string()) return bad("limits.over_budget", "must be \"stop\" or \"finish\"");
      o.limits.over_budget = p->get<std::string>();
    }
    if (auto b = l.find("user_budgets_usd"); b != l.end()) {
      if (!b->is_object()) return bad("limits.user_budgets_usd", "must be an object of user: USD");
      for (const auto& item : b->items()) {
        if (!item.value().is_number())
          return bad("limits.user_budgets_usd." + item.key(), "must be a number");
        o.limits.user_budgets_usd[item.key()] = item.value().get<double>();
      }
    }
  }
  if (auto it = root.find("metrics"); it != root.end()) {
    if (auto st = only(*it, {"enabled", "require_token"}, "metrics"); !st) return st;
    if (auto st = read_bool(*it, "enabled", "metrics", o.metrics.enabled); !st) return st;
    if (auto st = read_bool(*it, "require_token", "metrics", o.metrics.require_token); !st) return st;
  }
  return {};
}

Status validate_security(const SecurityOptions& o) {
  const LimitsOptions& l = o.limits;
  if (l.requests_per_s < 0 || l.requests_per_s > 1e6) return bad("limits.requests_per_s", "must be between 0 and 1000000");
  if (l.burst < 0 || l.burst > 1e7) return bad("limits.burst", "must be between 0 and 10000000");
  if (l.requests_per_s > 0 && l.burst < 1) return bad("limits.burst", "must be at least 1 when limits.requests_per_s is set");
  if (l.worker_requests_per_s < 0 || l.worker_requests_per_s > 1e6)
    return bad("limits.worker_requests_per_s", "must be between 0 and 1000000");
  if (l.max_waiting_jobs_per_user < 0) return bad("limits.max_waiting_jobs_per_user", "must be >= 0");
  if (l.monthly_budget_usd < 0) return bad("limits.monthly_budget_usd", "must be >= 0");
  for (const auto& [user, usd] : l.user_budgets_usd)
    if (usd < 0) return bad("limits.user_budgets_usd." + user, "must be >= 0");
  if (l.over_budget != "stop" && l.over_budget != "finish")
    return bad("limits.over_budget", "must be \"stop\" or \"finish\", not \"" + l.over_budget + "\"");
  return {};
}

}  // namespace jobctl::daemon::auth
