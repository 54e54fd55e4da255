// A lease's reports to jobctld (docs/api.md, "The worker protocol"): complete, fail, preempt and
// checkpoint rejections, each a typed message of protocol/worker_messages.h, sent with retries
// of transport failures (base/retry.h: six attempts, pauses from 0.5 s doubling, about 15 s in
// all) and logged.
//
// Ownership and thread safety: borrows the ApiClient and the log; one reporter per lease, used
// from the runner's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/retry.h"
#include "client/api_client.h"
#include "protocol/worker_messages.h"

namespace jobctl::worker {

class LeaseReporter {
 public:
  LeaseReporter(client::ApiClient& api, int64_t job_id, protocol::LeaseRef lease, std::ostream& log)
      : api_(api), job_id_(job_id), lease_(lease), log_(log) {}

  int64_t job_id() const { return job_id_; }
  const protocol::LeaseRef& lease() const { return lease_; }

  // Each pauses between its attempts in `wait` (a stop of the worker may end the pauses).
  void complete(const nlohmann::json& result, const RetryWait& wait);
  void fail(const std::string& why, const RetryWait& wait);  // logs `why` too
  void preempt(const std::string& reason, const RetryWait& wait);
  // The image the lease runs, as pulled (its digest: what ran).
  void image(const std::string& image, const std::string& digest, const RetryWait& wait);
  void reject_checkpoint(int64_t step, const std::string& why, std::optional<int64_t> fallback_step,
                         const RetryWait& wait);

 private:
  void report(const std::string& what, const std::function<Expected<nlohmann::json>()>& send, const RetryWait& wait);

  client::ApiClient& api_;
  const int64_t job_id_;
  const protocol::LeaseRef lease_;
  std::ostream& log_;
};

}  // namespace jobctl::worker
