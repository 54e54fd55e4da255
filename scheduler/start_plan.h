// When each job waiting for an owned machine is expected to start, and the one reservation that
// keeps a wide job from starving (Slurm's backfill rule, docs/cost-model.md, "Reservations and
// backfill").
//
// The jobs are taken in queue order (priority, then age: scheduler/job_queue.h). Each starts at
// the earliest time some machine it may run on has its GPUs free, the machines' GPUs freeing at
// their running jobs' expected ends and at the ends of the jobs planned before it; it then holds
// those GPUs for its own estimate. The first job that cannot start now is given a reservation:
// that machine, from that time. Another job may take GPUs of the reserved machine only if its
// estimate ends by the reserved start, or if enough of the machine's GPUs stay free at the
// reserved start for the reserved job all the same (may_backfill). The jobs taken before the
// reserved one are not held back by it: the plan made room for them first.
//
// A gang (nodes > 1) needs that many different machines at once: it starts when the last of the
// `nodes` machines that free its GPUs first does, holds the GPUs of each from then, and its
// reservation holds all of them.
//
// Thread safety: pure functions over values.
#pragma once

#include <algorithm>
#include <cstdint>
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

struct Reservation {
  int64_t job_id = 0;
  int64_t machine_id = 0;              // the first machine it holds
  int gpus = 1;                        // on each
  int64_t start_ms = 0;
  std::vector<int64_t> machine_ids;    // every machine it holds (a gang's nodes; empty: machine_id)

  bool holds(int64_t machine) const {
    return machine == machine_id || std::find(machine_ids.begin(), machine_ids.end(), machine) != machine_ids.end();
  }
};

struct StartPlan {
  std::optional<Reservation> reservation;
  // Job -> expected start; a job no machine can hold is absent.
  std::map<int64_t, int64_t> starts;
  // The jobs planned before the reserved one (ahead of it in the queue): the reservation was made
  // around them, so it never keeps them from a machine.
  std::set<int64_t> ahead_of_reservation;

  std::optional<int64_t> expected_start(int64_t job_id) const {
    auto it = starts.find(job_id);
    if (it == starts.end()) return std::nullopt;
    return it->second;
  }
};

StartPlan plan_starts(const std::vector<PlanMachine>& machines, const std::vector<PlanJob>& queue, int64_t now_ms);

// GPUs of the reserved machine (as `machine` says it is held) that are free at the reserved start
// beyond those the reservation needs: what jobs ending after that start may take.
int spare_gpus_at_start(const Reservation& r, const PlanMachine& machine);

// Slurm's rule: whether a job of `gpus` GPUs and `estimated_hours`, started now on `machine`, leaves
// the reservation's start where it is. Always true on a machine the reservation does not hold.
bool may_backfill(const Reservation& r, const PlanMachine& machine, int64_t now_ms, int gpus, double estimated_hours);

}  // namespace jobctl::scheduler
