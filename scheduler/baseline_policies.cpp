#include "scheduler/baseline_policies.h"

namespace jobctl::scheduler {

Capacity GreedyPolicy::choose(const ProgressState& s) {
  if (s.remaining_time() < s.remaining_compute() + 2 * s.changeover_hours) {
    commit_to_on_demand();
    return Capacity::on_demand;
  }
  return s.spot_available ? Capacity::spot : Capacity::none;
}

Capacity LocalFirstPolicy::choose(const ProgressState& s) {
  if (!s.local_available) return Capacity::on_demand;
  if (s.current == Capacity::on_demand && !can_defer_on_demand(s, Capacity::local)) return Capacity::on_demand;
  return Capacity::local;
}

}  // namespace jobctl::scheduler
