#include "daemon/notify/webhook_message.h"

#include <nlohmann/json.hpp>

#include "daemon/auth/secret.h"
#include "daemon/store/row_codecs.h"

namespace jobctl::daemon::notify {

using nlohmann::json;

std::string webhook_body(const store::DueDelivery& due) {
  const auto& ev = due.event;
  json job{{"id", ev.job_id}, {"name", due.job_name}};
  if (ev.to_state) job["state"] = store::job_state_name(*ev.to_state);
  return json{{"delivery", due.delivery.id},
              {"webhook", due.webhook.id},
              {"event", ev.type},
              {"time_ms", ev.time_ms},
              {"job", std::move(job)},
              {"detail", store::stored_json(ev.detail_json)}}
      .dump();
}

std::string webhook_signature(std::string_view secret, int64_t timestamp_s, std::string_view body) {
  const std::string t = std::to_string(timestamp_s);
  std::string signed_text;
  signed_text.reserve(t.size() + 1 + body.size());
  signed_text.append(t).append(".").append(body);
  return "t=" + t + ",v1=" + auth::hmac_sha256_hex(secret, signed_text);
}

std::vector<std::string> webhook_headers(const store::DueDelivery& due, int64_t timestamp_s, std::string_view body) {
  return {"Content-Type: application/json",
          "User-Agent: jobctld-webhooks/1",
          "Jobctl-Event: " + due.event.type,
          "Jobctl-Delivery: " + std::to_string(due.delivery.id),
          "Jobctl-Signature: " + webhook_signature(due.webhook.secret, timestamp_s, body)};
}

}  // namespace jobctl::daemon::notify
