#include "daemon/placement/start_board.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace jobctl::daemon::placement {

void StartBoard::publish(scheduler::StartPlan plan, const std::vector<scheduler::PlanMachine>& machines) {
  // A plan made by hand names its reservation only: it is the one hold.
  if (plan.holds.empty() && plan.reservation) plan.holds.push_back(*plan.reservation);
  std::map<int64_t, scheduler::PlanMachine> held;
  for (const auto& m : machines)
    for (const auto& h : plan.holds)
      if (h.holds(m.id)) {
        held.emplace(m.id, m);
        break;
      }
  MutexLock lock(mu_);
  plan_ = std::move(plan);
  held_machines_ = std::move(held);
}

bool StartBoard::admit(int64_t job_id, int gpus, double estimated_hours, int64_t worker_id, int64_t now_ms) {
  MutexLock lock(mu_);
  auto machine = held_machines_.find(worker_id);
  if (machine == held_machines_.end()) return true;
  // A job the plan did not see (submitted or placed since) is behind every hold.
  auto place = plan_.order.find(job_id);
  const size_t order = place == plan_.order.end() ? std::numeric_limits<size_t>::max() : place->second;
  std::vector<const scheduler::Reservation*> ahead;
  scheduler::Reservation* own = nullptr;
  for (auto& h : plan_.holds) {
    if (h.job_id == job_id) {
      own = &h;
      continue;
    }
    auto at = plan_.order.find(h.job_id);
    const size_t hold_order = at == plan_.order.end() ? 0 : at->second;  // a hand-made plan's: first
    if (hold_order < order && h.holds(worker_id)) ahead.push_back(&h);
  }
  if (!scheduler::may_start(ahead, machine->second, now_ms, gpus, estimated_hours)) return false;
  // A gang is offered to each of its workers in turn and may not assemble: its hold stays until
  // the next plan sees it leased (or not).
  if (own && own->machine_ids.size() > 1) return true;
  // It starts now: its GPUs are held from now on this machine (so that two jobs between passes
  // cannot both take the same room), and its own hold here is spent.
  const int64_t end = now_ms + static_cast<int64_t>(std::ceil(std::max(estimated_hours, 0.0) * 3.6e6));
  machine->second.held_until.insert(machine->second.held_until.end(), static_cast<size_t>(std::max(gpus, 1)), end);
  if (own && own->holds(worker_id)) own->end_ms = own->start_ms;  // empty: it holds nothing any more
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

std::vector<scheduler::Reservation> StartBoard::reservations() const {
  MutexLock lock(mu_);
  return plan_.reservations;
}

}  // namespace jobctl::daemon::placement
