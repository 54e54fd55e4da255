#include "scheduler/start_plan.h"

#include <algorithm>
#include <cmath>

namespace jobctl::scheduler {

namespace {

int64_t hours_to_ms(double hours) { return static_cast<int64_t>(std::ceil(std::max(hours, 0.0) * 3.6e6)); }

// Per GPU, when it is free: `now` for a free one, else its job's expected end (not before now: a
// job past its estimate is taken to end at once), sorted.
std::vector<int64_t> free_times(const PlanMachine& m, int64_t now_ms) {
  std::vector<int64_t> at(static_cast<size_t>(std::max(m.gpu_count, 1)), now_ms);
  for (size_t k = 0; k < m.held_until.size() && k < at.size(); ++k) at[k] = std::max(m.held_until[k], now_ms);
  std::sort(at.begin(), at.end());
  return at;
}

}  // namespace

StartPlan plan_starts(const std::vector<PlanMachine>& machines, const std::vector<PlanJob>& queue, int64_t now_ms,
                      int max_reservations) {
  StartPlan plan;
  std::map<int64_t, std::vector<int64_t>> free_at;  // machine -> per GPU, sorted
  for (const auto& m : machines) free_at.emplace(m.id, free_times(m, now_ms));
  for (const PlanJob& job : queue) {
    plan.order.emplace(job.id, plan.order.size());
    // Past the last reservation the plan only starts what fits now: a job behind it that waits
    // holds nothing and is planned on the next pass (Slurm's bf_max_job_test).
    const bool may_reserve = static_cast<int>(plan.reservations.size()) < std::max(max_reservations, 0);
    const size_t gpus = static_cast<size_t>(std::max(job.gpus, 1));
    const size_t nodes = static_cast<size_t>(std::max(job.nodes, 1));
    // Each machine it may use, by when `gpus` of its GPUs are free (earliest first; ties keep the
    // job's order of machines).
    std::vector<std::pair<int64_t, int64_t>> candidates;  // (start, machine)
    for (int64_t id : job.machines) {
      auto it = free_at.find(id);
      if (it == free_at.end() || it->second.size() < gpus) continue;
      if (std::any_of(candidates.begin(), candidates.end(), [id](const auto& c) { return c.second == id; })) continue;
      candidates.emplace_back(it->second[gpus - 1], id);
    }
    if (candidates.size() < nodes) continue;
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    candidates.resize(nodes);
    const int64_t start = candidates.back().first;  // the last of its machines to be free
    if (start > now_ms && !may_reserve) continue;
    plan.starts[job.id] = start;
    // It holds the GPUs that free first on each of its machines, from its start until its end.
    const int64_t end = start + hours_to_ms(job.estimated_hours);
    Reservation hold{job.id, candidates.front().second, static_cast<int>(gpus), start, {}, end};
    for (const auto& c : candidates) hold.machine_ids.push_back(c.second);
    if (start > now_ms) {
      if (!plan.reservation) {
        plan.reservation = hold;
        for (const auto& [id, planned] : plan.starts)
          if (id != job.id) plan.ahead_of_reservation.insert(id);
      }
      plan.reservations.push_back(hold);
    }
    plan.holds.push_back(std::move(hold));
    for (const auto& c : candidates) {
      auto& at = free_at[c.second];
      std::fill(at.begin(), at.begin() + static_cast<std::ptrdiff_t>(gpus), end);
      std::sort(at.begin(), at.end());
    }
  }
  return plan;
}

int spare_gpus_at_start(const Reservation& r, const PlanMachine& machine) {
  const auto held_past = std::count_if(machine.held_until.begin(), machine.held_until.end(),
                                       [&r](int64_t until) { return until > r.start_ms; });
  return machine.gpu_count - static_cast<int>(held_past) - r.gpus;
}

bool may_backfill(const Reservation& r, const PlanMachine& machine, int64_t now_ms, int gpus, double estimated_hours) {
  if (!r.holds(machine.id)) return true;
  if (now_ms + hours_to_ms(estimated_hours) <= r.start_ms) return true;
  return spare_gpus_at_start(r, machine) >= gpus;
}

bool may_start(const std::vector<const Reservation*>& ahead, const PlanMachine& machine, int64_t now_ms, int gpus,
               double estimated_hours) {
  // Nothing ahead of it here: what is free now is its (the worker's free GPUs say how much).
  if (std::none_of(ahead.begin(), ahead.end(), [&machine](const Reservation* h) { return h->holds(machine.id); }))
    return true;
  const int64_t end = now_ms + hours_to_ms(estimated_hours);
  // What is taken changes only where a hold begins (running jobs only end): judge now and each
  // hold's start within the run.
  std::vector<int64_t> moments{now_ms};
  for (const Reservation* h : ahead)
    if (h->holds(machine.id) && h->start_ms > now_ms && h->start_ms < end) moments.push_back(h->start_ms);
  for (int64_t t : moments) {
    int64_t taken = std::count_if(machine.held_until.begin(), machine.held_until.end(),
                                  [t](int64_t until) { return until > t; });
    for (const Reservation* h : ahead)
      if (h->holds(machine.id) && h->start_ms <= t && t < h->end_ms) taken += h->gpus;
    if (taken + std::max(gpus, 1) > machine.gpu_count) return false;
  }
  return true;
}

}  // namespace jobctl::scheduler
