// When each job waiting for an owned machine is expected to start, and the reservations that keep
// wide jobs from starving (Slurm's backfill rule, docs/cost-model.md, "Reservations and backfill").
//
// The jobs are taken in queue order (priority, then age: scheduler/job_queue.h). Each starts at
// the earliest time some machine it may run on has its GPUs free, the machines' GPUs freeing at
// their running jobs' expected ends and at the ends of the jobs planned before it; it then holds
// those GPUs for its own estimate. The first `max_reservations` jobs that cannot start now are
// each given a reservation: that machine, from that time, for its estimate. The plan's holds are
// those reservations and the jobs it starts now: what jobs behind them in the queue must leave in
// place (may_start). A job ahead of a hold in the queue is never held back by it: the plan made
// room for it first. So a reservation's start moves later only when the running jobs it waits for
// overrun their estimates, never because a job behind it started.
//
// A gang (nodes > 1) needs that many different machines at once: it starts when the last of the
// `nodes` machines that free its GPUs first does, holds the GPUs of each from then, and its
// reservation holds all of them.
//
// Thread safety: pure functions over values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace jobctl::scheduler {

// An owned machine as the plan sees it.
struct PlanMachine {
  int64_t id = 0;
  int gpu_count = 1;
  // One entry per GPU a running job holds: when that job is expected to end. Fewer entries than
  // gpu_count: the rest are free.
  std::vector<int64_t> held_until;
};

// A job waiting for a machine, in queue order.
struct PlanJob {
  int64_t id = 0;
  int gpus = 1;                    // per machine
  double estimated_hours = 0;     // its running time
  std::vector<int64_t> machines;  // the machines it may run on (PlanMachine::id)
  int nodes = 1;                  // machines it runs on at once (a gang)
};

// A job's hold on machines from a start: a reservation (start later than the plan's now) or a
// job the plan starts now.
struct Reservation {
  int64_t job_id = 0;
  int64_t machine_id = 0;              // the first machine it holds
  int gpus = 1;                        // on each
  int64_t start_ms = 0;
  std::vector<int64_t> machine_ids;    // every machine it holds (a gang's nodes; empty: machine_id)
  int64_t end_ms = std::numeric_limits<int64_t>::max();  // its start plus its estimate

  bool holds(int64_t machine) const {
    return machine == machine_id || std::find(machine_ids.begin(), machine_ids.end(), machine) != machine_ids.end();
  }
};

// The most reservations one plan makes by default (placement.max_reservations; Slurm's
// bf_max_job_test bounds its backfill pass the same way).
inline constexpr int kDefaultMaxReservations = 16;

struct StartPlan {
  // The first reservation (the job first in the queue that cannot start now); `reservations`
  // holds every one, in queue order.
  std::optional<Reservation> reservation;
  std::vector<Reservation> reservations;
  // Every hold, in queue order: the reservations and the jobs the plan starts now.
  std::vector<Reservation> holds;
  // Job -> expected start; a job no machine can hold, or behind the last reservation and unable
  // to start now, is absent.
  std::map<int64_t, int64_t> starts;
  // Job -> its place in the queue the plan was made from (0 first).
  std::map<int64_t, size_t> order;
  // The jobs planned before the first reserved one (ahead of it in the queue).
  std::set<int64_t> ahead_of_reservation;

  std::optional<int64_t> expected_start(int64_t job_id) const {
    auto it = starts.find(job_id);
    if (it == starts.end()) return std::nullopt;
    return it->second;
  }
};

StartPlan plan_starts(const std::vector<PlanMachine>& machines, const std::vector<PlanJob>& queue, int64_t now_ms,
                      int max_reservations = kDefaultMaxReservations);

// GPUs of the reserved machine (as `machine` says it is held) that are free at the reserved start
// beyond those the reservation needs: what jobs ending after that start may take.
int spare_gpus_at_start(const Reservation& r, const PlanMachine& machine);

// Slurm's rule: whether a job of `gpus` GPUs and `estimated_hours`, started now on `machine`, leaves
// the reservation's start where it is. Always true on a machine the reservation does not hold.
bool may_backfill(const Reservation& r, const PlanMachine& machine, int64_t now_ms, int gpus, double estimated_hours);

// The same over every hold ahead of the job on `machine` (`ahead`: holds of jobs before it in
// the queue, its own excluded): at each moment of its run from now, what the machine's running
// jobs (held_until) and those holds take leaves room for its `gpus`. With no hold ahead of it,
// always true.
bool may_start(const std::vector<const Reservation*>& ahead, const PlanMachine& machine, int64_t now_ms, int gpus,
               double estimated_hours);

}  // namespace jobctl::scheduler
