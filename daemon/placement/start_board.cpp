#include "daemon/placement/start_board.h"

#include <algorithm>
#include <cmath>

namespace jobctl::daemon::placement {

void StartBoard::publish(scheduler::StartPlan plan, const std::vector<scheduler::PlanMachine>& machines) {
  std::map<int64_t, scheduler::PlanMachine> reserved;
  if (plan.reservation)
    for (const auto& m : machines)
      if (plan.reservation->holds(m.id)) reserved.emplace(m.id, m);
  MutexLock lock(mu_);
  plan_ = std::move(plan);
  reserved_machines_ = std::move(reserved);
}

bool StartBoard::admit(int64_t job_id, int gpus, double estimated_hours, int64_t worker_id, int64_t now_ms) {
  MutexLock lock(mu_);
  const auto& r = plan_.reservation;
  if (!r || r->job_id == job_id) return true;
  auto machine = reserved_machines_.find(worker_id);
  if (machine == reserved_machines_.end()) return true;
  if (plan_.ahead_of_reservation.count(job_id)) return true;
  if (!scheduler::may_backfill(*r, machine->second, now_ms, gpus, estimated_hours)) return false;
  const int64_t end = now_ms + static_cast<int64_t>(std::ceil(std::max(estimated_hours, 0.0) * 3.6e6));
  machine->second.held_until.insert(machine->second.held_until.end(), static_cast<size_t>(std::max(gpus, 1)), end);
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
