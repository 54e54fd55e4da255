#include "cost/steady_step_time.h"

#include <algorithm>
#include <cmath>

namespace jobctl::cost {

void SteadyStepTime::add(int64_t step, double step_ms) {
  if (step <= last_step_ || !(step_ms > 0) || !std::isfinite(step_ms)) return;
  last_step_ = step;
  if (windows_ms_.size() < kMaxWindows) windows_ms_.push_back(step_ms);
}

std::optional<double> SteadyStepTime::seconds() const {
  if (windows_ms_.empty()) return std::nullopt;
  if (windows_ms_.size() == 1) return windows_ms_.front() / 1000.0;
  std::vector<double> rest(windows_ms_.begin() + 1, windows_ms_.end());
  const size_t mid = rest.size() / 2;
  std::nth_element(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(mid), rest.end());
  double median = rest[mid];
  if (rest.size() % 2 == 0) median = (median + *std::max_element(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
  return median / 1000.0;
}

}  // namespace jobctl::cost
