#include "daemon/placement/job_progress.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace jobctl::daemon::placement {

double done_fraction(const std::optional<std::string>& progress_json) {
  if (!progress_json) return 0;
  const auto p = nlohmann::json::parse(*progress_json, nullptr, false);
  if (!p.is_object()) return 0;
  auto number = [&p](const char* key) {  // a worker's report: a missing or odd field reads as 0
    auto it = p.find(key);
    return it != p.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  const double step = number("step"), total = number("total_steps");
  if (total <= 0 || step <= 0) return 0;
  return std::clamp(step / total, 0.0, 1.0);
}

}  // namespace jobctl::daemon::placement
