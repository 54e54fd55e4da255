#include "daemon/auth/auth_rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace jobctl::daemon::auth {

std::optional<int64_t> RateLimiter::take(int64_t key, double rate, double burst) {
  if (rate <= 0) return std::nullopt;
  burst = std::max(1.0, burst);
  const int64_t now = clock_.now_ms();
  MutexLock lock(mu_);
  auto [it, fresh] = buckets_.try_emplace(key, Bucket{burst, now});
  Bucket& b = it->second;
  if (!fresh) {
    const double elapsed_s = static_cast<double>(std::max<int64_t>(0, now - b.last_ms)) / 1000.0;
    b.tokens = std::min(burst, b.tokens + elapsed_s * rate);
    b.last_ms = now;
  }
  if (b.tokens >= 1.0) {
    b.tokens -= 1.0;
    return std::nullopt;
  }
  return static_cast<int64_t>(std::ceil((1.0 - b.tokens) / rate * 1000.0));
}

}  // namespace jobctl::daemon::auth
