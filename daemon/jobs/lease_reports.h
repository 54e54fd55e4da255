// What a worker reports under its lease (docs/job-protocol.md): heartbeats, and the ends of a
// lease — completed, failed, given back (preempted or moved). Every report names the lease it acts
// under and is fenced (lease_fence.h): one that does not carry the job's current (worker, epoch)
// is refused with code "stale_epoch" and changes nothing.
//
// It also keeps the newest heartbeat of every running lease in memory (live_leases.h), so most
// heartbeats need no store change, and ends a lease for whoever ends one (end_lease_in: the
// reports here, a cancel, a lost lease), storing its newest progress and telling the lease
// recorder.
//
// Ownership: borrows the Store, the Clock, the lease recorder (may be null), the broker, the moves
// and the observer (all outlive it); owns the live leases.
// Thread safety: every method is safe from any thread. heartbeat_async's `done` runs on the
// calling thread or the store's writer thread; *_in methods run inside a store change.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/clock.h"
#include "base/expected.h"
#include "daemon/jobs/job_moves.h"
#include "daemon/jobs/job_observer.h"
#include "daemon/jobs/lease_broker.h"
#include "daemon/jobs/lease_recorder.h"
#include "daemon/jobs/live_leases.h"
#include "daemon/jobs/protocol.h"
#include "daemon/jobs/service_options.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::jobs {

class LeaseReports {
 public:
  LeaseReports(store::Store& store, const Clock& clock, const ServiceOptions& options, LeaseRecorder* recorder,
               LeaseBroker& broker, JobMoves& moves, JobObserver& observer);
  LeaseReports(const LeaseReports&) = delete;
  LeaseReports& operator=(const LeaseReports&) = delete;

  // Most heartbeats are answered from memory, on the calling thread (live_leases.h); the others
  // when their store change commits, on the store's writer thread. `done` must be quick either way.
  void heartbeat_async(int64_t job_id, const HeartbeatReport& report,
                       std::function<void(Expected<HeartbeatReply>)> done);
  Expected<JobRow> complete(int64_t job_id, const CompletionReport& report);
  Expected<JobRow> fail(int64_t job_id, const FailureReport& report);
  // The worker gives the job back: running -> preempted -> queued, a recovery counted (failed
  // past max_recoveries); a job asked to move is requeued with a `moved` event and no recovery.
  Expected<JobRow> preempt(int64_t job_id, const PreemptionReport& report);
  // The image the lease runs, as its worker resolved it: the job's image_digest, and an `image`
  // event when the digest is new to the job (a retried report changes nothing). Any node of a
  // gang may report; the job must be leased (placed or running) under that lease.
  Expected<JobRow> report_image(int64_t job_id, const ImageReport& report);

  // `job`'s lease ends in this change: its newest progress (live_leases.h) goes into `job`, which
  // the caller writes, and the lease recorder is told (nothing without one or a lease). A gang's
  // nodes' leases end with it.
  Status end_lease_in(store::WriteTxn& txn, store::JobRow& job, int64_t now);
  // The job's lease was lost (its worker, or a node of its gang, gone or failed): it ends, the job
  // goes preempted -> queued with one recovery counted (failed past max_recoveries), and is
  // queued unplaced so that placement places it anew. `job` is left as written. `detail`: the
  // `preempted` event's.
  Status interrupt_in(store::WriteTxn& txn, store::JobRow& job, const nlohmann::json& detail,
                      const std::string& reason, int64_t now);
  // Whether the gang replaces a lost node of rank > 0 rather than restart (its spec's
  // resources.on_node_loss is "replace_node").
  static bool replaces_lost_nodes(const store::JobRow& job);
  // Node `rank` (> 0) of `job`'s gang is lost while the others go on: its rank becomes vacant —
  // waiting up to workers.gang_assembly_s for a replacement the broker leases it to, after which
  // the gang restarts (lease expiry) —, its billing ends, a `node_lost` event says so, and the
  // broker is told. Nothing else of the job changes.
  Status vacate_node_in(store::WriteTxn& txn, const store::JobRow& job, int rank, const std::string& reason,
                        int64_t now);
  // Writes `hb` (a heartbeat answered from memory) into `job`: its progress, and its lease's
  // expiry moved to at least hb.last_ms + the timeout; the live leases learn it when this commits.
  Status store_heartbeat_in(store::WriteTxn& txn, store::JobRow job, const LiveHeartbeat& hb);

  // A job or a lease read from the store, given its running lease's newest heartbeat.
  void add_newest_heartbeat(store::JobRow& job) const;
  void add_newest_heartbeat(store::LeaseSummary& lease) const;
  // Stores the newest heartbeat of every lease whose stored copy is older (at shutdown).
  Status store_live_heartbeats();

  // Heartbeats answered while the store could not write them (kept in memory, stored later).
  int64_t held_heartbeats() const { return held_heartbeats_.load(std::memory_order_relaxed); }

  LiveLeases& live() { return live_; }
  const LiveLeases& live() const { return live_; }

 private:
  // How a worker's report ends its lease: succeeded with a result, or failed with an error.
  struct Outcome {
    JobState state = JobState::succeeded;
    std::string result_json;  // succeeded
    std::string error;        // failed
  };
  // complete() and fail(): the fenced report moves the job (started first, if it never heartbeat)
  // to the outcome; a retried report of the same outcome returns the job unchanged.
  Expected<JobRow> end_lease(int64_t job_id, const LeaseRef& lease, Outcome outcome);
  // Node `rank` of a gang reported its program's end under `lease`: a success of rank > 0 is noted
  // (rank 0's report is the job's outcome); any node's failure restarts the gang (interrupt_in).
  Expected<JobRow> gang_node_ended_in(store::WriteTxn& txn, store::JobRow job, int rank, const LeaseRef& lease,
                                      const Outcome& outcome, int64_t now);
  // A gang's node of rank > 0 gave the job back: the gang is asked to move, so rank 0 checkpoints.
  Expected<JobRow> gang_node_given_back_in(store::WriteTxn& txn, store::JobRow job, const store::GangMemberRow& node,
                                           const std::string& reason, int64_t now);
  // A heartbeat whose store change failed because the store cannot write: when its lease is
  // current and running, it is recorded in the live leases (stored once the store writes again)
  // and true is returned, so the worker is answered as usual.
  bool hold_unstored(int64_t job_id, const HeartbeatReport& report, int64_t now, int64_t steady);
  // The reply to an accepted heartbeat, shared by both paths of heartbeat_async.
  void answer_heartbeat(int64_t job_id, const HeartbeatReport& report, Expected<HeartbeatReply> reply,
                        const std::function<void(Expected<HeartbeatReply>)>& done);

  store::Store& store_;
  const Clock& clock_;
  const ServiceOptions options_;
  LeaseRecorder* const recorder_;
  LeaseBroker& broker_;
  JobMoves& moves_;
  JobObserver& observer_;
  LiveLeases live_;  // its own lock
  std::atomic<int64_t> held_heartbeats_{0};
};

}  // namespace jobctl::daemon::jobs
