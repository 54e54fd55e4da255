// The job service's background passes, on the daemon's ticker (docs/recovery.md): long-polls past
// their deadline are answered, and (at most once a second) expired leases are lost, silent
// workers marked lost and placed jobs that no worker claimed unplaced.
//
// Ownership: borrows the Store, the Clock, the log and the other parts of the service (all
// outlive it); owns the pass logs. Thread safety: every method is safe from any thread; tick()
// is meant for one ticker thread (the passes are store changes, serialised by the store).
#pragma once

#include <cstdint>
#include <string>

#include "base/clock.h"
#include "base/expected.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/pass_log.h"
#include "daemon/jobs/job_commands.h"
#include "daemon/jobs/job_moves.h"
#include "daemon/jobs/lease_broker.h"
#include "daemon/jobs/lease_reports.h"
#include "daemon/jobs/service_options.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::jobs {

class Housekeeping {
 public:
  Housekeeping(store::Store& store, const Clock& clock, const ServiceOptions& options, Log& log, LeaseBroker& broker,
               LeaseReports& reports, JobCommands& commands, JobMoves& moves);
  Housekeeping(const Housekeeping&) = delete;
  Housekeeping& operator=(const Housekeeping&) = delete;

  // Answers the long-polls past their deadline, then runs the passes below when a second has
  // passed since they last ran. A failed pass is logged.
  void tick() JOBCTL_EXCLUDES(mu_);

  // lease_expiry.cpp: every placed or running job whose lease was not renewed before its expiry
  // loses its lease (lose_lease_in). Returns how many leases expired.
  Expected<int> expire_leases();
  // The machine under a worker is gone: every job leased to it loses its lease at once.
  Expected<int> release_worker_leases(int64_t worker_id, const std::string& reason);
  // A worker registered from a machine older workers named too (WorkerCapabilities::machine_id):
  // the machine was restarted, so those workers are dead. Each one's jobs lose their lease now
  // (billing ends now, not a lease timeout later) and it is marked gone. Returns how many leases
  // were released. Nothing happens for an empty machine_id.
  Expected<int> retire_replaced_workers(int64_t worker_id, const std::string& machine_id);
  // worker_liveness.cpp: an active worker silent for longer than the lease timeout, and not in a
  // long-poll now, is marked lost. Returns how many.
  Expected<int> mark_silent_workers_lost();
  // A job placed on a local pool or a cloud offer that no worker took within the lease timeout
  // after the wait its placement expected (a busy pool, an instance's boot) is unplaced, so
  // placement places it again. Returns how many.
  Expected<int> unplace_unclaimed();

 private:
  // One lost lease inside a store change (LeaseReports::interrupt_in, `job` updated): running (or
  // placed) -> preempted -> queued, a recovery counted (failed past max_recoveries), and
  // `worker_id` — the job's own worker, or the node `rank` of its gang that went — marked lost.
  Status lose_lease_in(store::WriteTxn& txn, store::JobRow& job, std::optional<int64_t> worker_id,
                       std::optional<int> rank, const std::string& reason, int64_t now);
  // Every job leased to the worker loses its lease (lose_lease_in); returns how many.
  Expected<int> release_worker_leases_in(store::WriteTxn& txn, int64_t worker_id, const std::string& reason,
                                         int64_t now);

  store::Store& store_;
  const Clock& clock_;
  const ServiceOptions options_;
  Log& log_;
  LeaseBroker& broker_;
  LeaseReports& reports_;
  JobCommands& commands_;
  JobMoves& moves_;
  PassLog expiry_log_{"lease expiry"};
  PassLog silent_workers_log_{"marking silent workers lost"};
  PassLog unclaimed_log_{"unplacing jobs no worker claimed"};

  Mutex mu_;
  int64_t next_pass_ms_ JOBCTL_GUARDED_BY(mu_) = 0;  // steady clock: tick() runs the passes when due
};

}  // namespace jobctl::daemon::jobs
