// The start plan of the owned machines as the last placement pass made it (scheduler/start_plan.h),
// shared with the matcher that hands jobs to workers: jobs wait in start order and the plan's
// holds — the jobs it starts now and its reservations, a wide job's machine or a gang's machines —
// keep their GPUs for them (docs/cost-model.md, "Reservations and backfill").
//
// Placement publishes a plan every pass, from the local workers, what their running jobs hold
// until their estimates end, and the jobs placed on them waiting for a worker. Between passes the
// matcher asks admit() before offering a job to a worker: on a machine with holds, a job is
// admitted only where it leaves every hold of a job ahead of it in the queue in place
// (scheduler::may_start), and an admitted job is counted on that machine at once so that two
// backfills between passes cannot both take the same spare GPUs.
//
// expected_start() answers "when is job J expected to start" for any reader (show, ls, reasons).
//
// Thread safety: every method is safe from any thread. One short mutex, which takes no other (the
// matcher calls admit() under the lease broker's mutex).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "base/mutex.h"
#include "scheduler/start_plan.h"

namespace jobctl::daemon::placement {

class StartBoard {
 public:
  void publish(scheduler::StartPlan plan, const std::vector<scheduler::PlanMachine>& machines) JOBCTL_EXCLUDES(mu_);

  // Whether the job may start on this worker now: only where it leaves the holds of the jobs
  // ahead of it in place (a job the last plan did not see is behind all of them); when it may,
  // its GPUs are counted as held on that worker until its estimate ends, and its own hold there is
  // spent (a gang's stays until the next plan: it may not assemble).
  bool admit(int64_t job_id, int gpus, double estimated_hours, int64_t worker_id, int64_t now_ms) JOBCTL_EXCLUDES(mu_);

  // When the job, placed on an owned machine and waiting for it, is expected to start (ms since
  // the epoch); nullopt: it is not waiting for an owned machine, or no machine can hold it.
  std::optional<int64_t> expected_start(int64_t job_id) const JOBCTL_EXCLUDES(mu_);
  // The first reservation; every reservation, in queue order.
  std::optional<scheduler::Reservation> reservation() const JOBCTL_EXCLUDES(mu_);
  std::vector<scheduler::Reservation> reservations() const JOBCTL_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  scheduler::StartPlan plan_ JOBCTL_GUARDED_BY(mu_);
  // The machines some hold is on, as the plan saw them, plus the jobs admitted onto them since.
  std::map<int64_t, scheduler::PlanMachine> held_machines_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::daemon::placement
