// What one webhook delivery sends (docs/notifications.md, "What a receiver gets"): a JSON body
// describing the job event, and the headers that sign it.
//
//   Jobctl-Event: succeeded
//   Jobctl-Delivery: 42                  (the same on every retry: a receiver can drop repeats)
//   Jobctl-Signature: t=1764200000,v1=<hex HMAC-SHA256 of "<t>.<body>" under the webhook's secret>
//
// The timestamp is signed with the body so that a receiver can refuse an old message replayed.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/store/records.h"

namespace jobctl::daemon::notify {

// The delivery's body: the same bytes on every attempt.
std::string webhook_body(const store::DueDelivery& due);

// "t=<timestamp_s>,v1=<hex>" over "<timestamp_s>.<body>".
std::string webhook_signature(std::string_view secret, int64_t timestamp_s, std::string_view body);

// The header lines of one attempt (Content-Type, User-Agent, Jobctl-Event, Jobctl-Delivery,
// Jobctl-Signature).
std::vector<std::string> webhook_headers(const store::DueDelivery& due, int64_t timestamp_s, std::string_view body);

}  // namespace jobctl::daemon::notify
