// Requests per second per API token: one token bucket per key. A bucket holds up to
// `burst` requests and refills at `rate` per second; a request takes one, or is refused with the
// time until one is available (the HTTP layer answers 429 with Retry-After).
//
// Time comes from the injected Clock. Thread safety: take() is safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "base/clock.h"
#include "base/mutex.h"

namespace jobctl::daemon::auth {

class RateLimiter {
 public:
  explicit RateLimiter(const Clock& clock) : clock_(clock) {}

  // Takes one request from `key`'s bucket. nullopt: allowed. Otherwise the milliseconds until
  // the next request would be allowed. rate <= 0 means unlimited.
  std::optional<int64_t> take(int64_t key, double rate, double burst);

 private:
  struct Bucket {
    double tokens = 0;
    int64_t last_ms = 0;
  };
  const Clock& clock_;
  Mutex mu_;
  std::unordered_map<int64_t, Bucket> buckets_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::daemon::auth
