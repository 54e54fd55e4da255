#include "daemon/placement/start_board.h"

#include <algorithm>
#include <cmath>

namespace jobctl::daemon::placement {

void StartBoard::publish(scheduler::StartPlan plan, const std::vector<scheduler::PlanMachine>& machines) {
  std::optional<scheduler::PlanMachine> reserved;
  if (plan.reservation) {
    auto it = std::find_if(machines.begin(), machines.end(),
                           [&plan](const scheduler::PlanMachine& m) { return m.id == plan.reservation->machine_id; });
    if (it != machines.end()) reserved = *it;
  }
  MutexLock lock(mu_);
  plan_ = std::move(plan);
  reserved_machine_ = std::move(reserved);
}

bool StartBoard::admit(int64_t job_id, int gpus, double estimated_hours, int64_t worker_id, int64_t now_ms) {
  MutexLock lock(mu_);
  const auto& r = plan_.reservation;
  if (!r || !reserved_machine_ || r->job_id == job_id || r->machine_id != worker_id) return true;
  if (plan_.ahead_of_reservation.count(job_id)) return true;
  if (!scheduler::may_backfill(*r, *reserved_machine_, now_ms, gpus, estimated_hours)) return false;
  const int64_t end = now_ms + static_cast<int64_t>(std::ceil(std::max(estimated_hours, 0.0) * 3.6e6));
  reserved_machine_->held_until.insert(reserved_machine_->held_until.end(), static_cast<size_t>(std::max(gpus, 1)), end);
  return true;
}

std::optional<int64_t> StartBoard::expected_start(int64_t job_id) const {
  MutexLock lock(mu_);
  return plan_.expected_start(job_id);
}

std::optional<scheduler::Reservation> StartBoard::reservation() const {
  MutexLock lock(mu_);
  return plan_.reservation;
}

}  // namespace jobctl::daemon::placement
