#include "scheduler/uniform_progress.h"

namespace jobctl::scheduler {

Capacity UniformProgressPolicy::choose(const ProgressState& s) {
  const double d = s.changeover_hours;
  if (s.remaining_time() < s.remaining_compute() + 2 * d) {
    commit_to_on_demand();
    return Capacity::on_demand;
  }
  const double slope = s.deadline_hours > 0 ? s.total_compute_hours / s.deadline_hours : 1.0;
  auto expected_progress = [&](double t) { return t * slope; };
  const double done = s.done_compute_hours;
  if (s.current == Capacity::on_demand && done < expected_progress(s.elapsed_hours + 2 * d))
    return Capacity::on_demand;
  if (s.spot_available) return Capacity::spot;
  if (done < expected_progress(s.elapsed_hours)) return Capacity::on_demand;
  return Capacity::none;
}

}  // namespace jobctl::scheduler
