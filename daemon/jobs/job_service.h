// The jobs and workers logic behind every endpoint, independent of HTTP: the handlers decode a
// request, call one method here, and encode its answer. Tests drive it directly, without sockets.
//
// Every state change goes through scheduler::can_transition and writes its job_events row in the
// same transaction (one store change per logical operation). Lease epochs are fencing tokens: a
// report that does not carry the job's current (worker, epoch) is refused with code
// "stale_epoch" and changes nothing.
//
// Leases are long-polls that hold no thread: lease() registers a waiter that is completed when a
// fitting job is queued (from a store commit hook), or with "no job" by tick() once its deadline
// has passed, or by shutdown().
//
// Ownership: borrows the Store and the Clock (both outlive the service); owns the matcher, the
// in-memory queue and the waiters. Thread safety: every method is safe from any thread. Lease
// callbacks run on whichever thread completes them (a writer-thread commit, tick(), or the
// caller) and must be quick; they are never called with the service's mutex held.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/pass_log.h"
#include "daemon/jobs/job_matcher.h"
#include "daemon/jobs/job_moves.h"
#include "daemon/jobs/feasibility.h"
#include "daemon/jobs/job_queue.h"
#include "daemon/jobs/lease_recorder.h"
#include "daemon/jobs/live_leases.h"
#include "daemon/jobs/protocol.h"
#include "daemon/jobs/submit_admission.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::jobs {

struct ServiceOptions {
  int heartbeat_interval_s = 2;   // how often a worker should heartbeat a running job
  int lease_timeout_s = 60;       // a lease not renewed for this long expires
  int max_lease_wait_s = 60;      // longest long-poll a worker may ask for
  int max_list_limit = 1000;      // largest page of GET /v1/jobs
  int max_recoveries = 10;        // preemptions after which a job fails instead of requeueing
};

class JobService {
 public:
  // Callback of lease(): a grant, nullopt (no job before the deadline), or an Error.
  using LeaseCallback = std::function<void(Expected<std::optional<LeaseGrant>>)>;

  JobService(store::Store& store, const Clock& clock, std::unique_ptr<JobMatcher> matcher,
             ServiceOptions options = {});
  ~JobService();
  JobService(const JobService&) = delete;
  JobService& operator=(const JobService&) = delete;

  // Loads the queue from the store. Call once before serving.
  Status start();

  // ---- jobs
  // Validates the spec (train::parse_job_spec), stores its canonical form, queues it.
  // `context` (auth): the owner is stored with the job; a non-empty idempotency key
  // already used by this owner returns that first job unchanged instead of a new one.
  Expected<JobRow> submit_job(std::string_view spec_json, const SubmitContext& context = {});
  // The same without blocking: the spec is checked on the calling thread, and `done` runs on the
  // store's writer thread once the job is durable (or with the error). It must be quick.
  void submit_job_async(std::string_view spec_json, const SubmitContext& context,
                        std::function<void(Expected<JobRow>)> done);
  Expected<JobPage> list_jobs(const JobListRequest& request);
  Expected<JobDetail> get_job(int64_t id);
  // Any non-terminal job becomes cancelled (a worker running it learns on its next heartbeat);
  // cancelling a cancelled job is a no-op; a succeeded or failed one is a conflict.
  Expected<JobRow> cancel_job(int64_t id);

  // ---- workers
  Expected<WorkerRegistered> register_worker(const WorkerRegistration& request);
  // The workers with id > after_id (at most `limit`; negative: all), in id order, with the jobs
  // each holds now (only `owner`'s jobs when given: a user's view).
  Expected<std::vector<WorkerInfo>> list_workers(const std::optional<std::string>& owner = std::nullopt,
                                                 int64_t after_id = 0, int64_t limit = -1);
  // Offers the worker a fitting job now, or waits up to wait_ms for one (0: do not wait).
  // `free_gpus`: the indices (into its registered GPUs) of the GPUs it has free now; only jobs
  // that fit those are offered, and the lease names the ones the job takes (LeaseGrant::gpus).
  // None: all of them (a worker that runs one job at a time).
  void lease(int64_t worker_id, int64_t wait_ms, LeaseCallback done,
             std::optional<std::vector<int>> free_gpus = std::nullopt);
  Expected<HeartbeatReply> heartbeat(int64_t job_id, const HeartbeatReport& report);
  // The same without blocking. Most heartbeats are answered from memory, on the calling thread
  // (live_leases.h); the others when their store change commits, on the store's writer thread.
  // `done` must be quick either way.
  void heartbeat_async(int64_t job_id, const HeartbeatReport& report,
                       std::function<void(Expected<HeartbeatReply>)> done);
  Expected<JobRow> complete(int64_t job_id, const CompletionReport& report);
  Expected<JobRow> fail(int64_t job_id, const FailureReport& report);
  // The worker gives the job back (it is shutting down or its machine is being reclaimed): the
  // job goes running -> preempted -> queued and counts a recovery (or fails past the maximum).
  // A job asked to move (request_move) goes running -> preempted -> queued with a `moved` event
  // instead, and counts no recovery.
  Expected<JobRow> preempt(int64_t job_id, const PreemptionReport& report);
  // Asks a placed or running job's worker to checkpoint and give the job back (job_moves.h): the
  // next heartbeat reply says `move`. Records a `move_requested` event. Errors: not_found; conflict
  // when the job is not leased (queued, placed on nothing yet, or ended).
  Expected<JobRow> request_move(int64_t job_id, const MoveRequest& request);
  // Whether the job is asked to move and has not been given back yet.
  bool move_requested(int64_t job_id) const { return moves_.requested(job_id); }
  // The option a moved job must be placed on (placement asks; anywhere when it was not moved).
  MoveTarget move_target(int64_t job_id) const { return moves_.target(job_id); }

  // Housekeeping on the daemon's ticker: completes long-polls whose deadline has passed, and
  // (at most once a second) expires leases, marks silent workers lost and unplaces unclaimed
  // jobs. A failed pass is logged (set_log).
  void tick();
  // Lease expiry (lease_expiry.cpp): every placed or running job whose lease was not
  // renewed before its expiry goes running -> preempted -> queued (its latest checkpoint is named
  // by the next lease), counts a recovery (failing past max_recoveries), and its worker is
  // marked lost. Returns how many leases expired.
  Expected<int> expire_leases();
  // The machine under a worker is gone (its cloud instance was reclaimed or terminated): every
  // job leased to it is handled as an expired lease at once, without waiting for the timeout.
  // Returns how many jobs were released.
  Expected<int> release_worker_leases(int64_t worker_id, const std::string& reason);
  // A placed job that no worker has taken goes back to the queue unplaced (its cloud instance
  // could not be launched), with an `unplaced` event giving the reason; placement re-places it.
  // A job in any other state is left alone (false).
  Expected<bool> unplace(int64_t job_id, const std::string& reason);
  // Liveness (worker_liveness.cpp), on the ticker with lease expiry: an active worker silent
  // (no lease poll, no heartbeat) for longer than lease_timeout_s, and not waiting in a
  // long-poll now, is marked lost, which takes it out of placement until it asks again. Returns
  // how many were marked.
  Expected<int> mark_silent_workers_lost();
  // A job placed on a local pool or a cloud offer that no worker has taken within lease_timeout_s
  // after the wait its placement expected (a busy pool, an instance's boot) is unplaced (event
  // `unplaced`, the reason naming the pool or instance kind and the time), so placement places it
  // again among the workers and offers there are then. Returns how many.
  Expected<int> unplace_unclaimed();
  // Completes every waiting long-poll with "no job" and refuses new waits. Idempotent.
  void shutdown();
  // A job or a lease read from the store, given its running lease's newest heartbeat (progress,
  // and a job's lease expiry), which the store may have only up to half a lease timeout later
  // (live_leases.h). The job views do this; so must whatever else reads a running job's progress.
  void add_newest_heartbeat(store::JobRow& job) const;
  void add_newest_heartbeat(store::LeaseSummary& lease) const;
  // Stores the newest heartbeat (progress, expiry) of every lease whose stored copy is older
  // (live_leases.h): at shutdown, once no request is served any more, so a restart loses none.
  Status store_live_heartbeats();

  // Hooks, set before serving: limits and budget holds checked inside every submit's
  // transaction (submit_admission.h; not owned, outlives the service), and an
  // observer told how long each leased job waited in the queue (metrics; must be quick).
  void set_admission(SubmitAdmission* admission) { admission_ = admission; }
  // Told of every lease's start and end inside its transaction (lease_recorder.h: owned-GPU
  // billing; not owned, outlives the service). None: leases are recorded in the jobs only.
  void set_lease_recorder(LeaseRecorder* recorder) { lease_recorder_ = recorder; }
  // Where failed background passes are written (base/pass_log.h); default: stderr. Not owned.
  void set_log(Log* log) { log_ = log; }
  // Refusal at submit of what nothing could ever run (feasibility.h; not owned, outlives the
  // service); it is told of every registration. None: every valid spec is accepted.
  void set_feasibility(Feasibility* feasibility) { feasibility_ = feasibility; }
  void set_lease_observer(std::function<void(int64_t queue_wait_ms)> observer) {
    lease_observer_ = std::move(observer);
  }
  // Placement hooks (placement_service.h), set before serving: told the id of every job
  // that enters the queue unplaced (submit, requeue), and every heartbeat's progress (runtime
  // calibration). Both run on the store's writer thread (commit hooks, heartbeat completions),
  // the heartbeat observer also on the thread of a heartbeat answered from memory: they must be
  // quick, must not block on the store (no reads, no blocking writes) and must not call back
  // into the service synchronously — record, and let another thread do the work.
  void set_queued_observer(std::function<void(int64_t job_id)> observer) {
    queued_observer_ = std::move(observer);
  }
  void set_heartbeat_observer(
      std::function<void(int64_t job_id, int64_t worker_id, const std::string& progress_json)> observer) {
    heartbeat_observer_ = std::move(observer);
  }
  // Told of every job that succeeds, with the worker that ran it and its result (JSON object text):
  // runtime calibration learns from whole runs. Runs on the store's writer thread (a commit hook),
  // with the same rules as the observers above.
  void set_completion_observer(
      std::function<void(int64_t job_id, int64_t worker_id, const std::string& result_json)> observer) {
    completion_observer_ = std::move(observer);
  }
  // Told when a worker registers or comes back (a worker marked lost asks for work again): what
  // placement may use changed. Runs on the registering thread or a writer-thread commit hook;
  // must be quick and must not call back into the service synchronously.
  void set_worker_observer(std::function<void(int64_t worker_id)> observer) { worker_observer_ = std::move(observer); }
  // The placement service placed a job: its matching entry (with the chosen option) replaces the
  // unplaced one and waiting workers are offered it.
  void job_placed(const QueuedJob& job);

  const ServiceOptions& options() const { return options_; }
  size_t queued_count() const;
  size_t waiting_workers() const;

 private:
  struct Waiter {
    uint64_t id = 0;
    int64_t worker_id = 0;
    WorkerCapabilities caps;       // for matching: its free GPUs only
    std::vector<int> gpu_indices;  // caps.gpus[k] is the worker's GPU gpu_indices[k]
    int64_t deadline_ms = 0;
    LeaseCallback done;
  };
  using Completions = std::vector<std::function<void()>>;

  Expected<WorkerCapabilities> worker_capabilities(int64_t worker_id);
  // Called with mu_ held: offers jobs to waiting workers while both remain.
  void dispatch_locked(Completions& later) JOBCTL_REQUIRES(mu_);
  // Called with mu_ held: reserves a job for the waiter and adds its lease change to `later`,
  // which the caller runs once mu_ is released (a store completion may need mu_ itself).
  bool try_assign_locked(Waiter& waiter, Completions& later) JOBCTL_REQUIRES(mu_);
  void on_lease_done(Waiter waiter, int64_t job_id, Status st,
                     const std::shared_ptr<LeaseGrant>& grant);
  void on_job_queued(const QueuedJob& job);
  void on_job_left_queue(int64_t job_id);
  // lease_expiry.cpp: one lease lost (expired, or its machine gone), inside a store change.
  Status lose_lease_in(store::WriteTxn& txn, store::JobRow job, const std::string& reason, int64_t now);
  // `job`'s lease ends in this change: its newest progress (live_leases.h) goes into `job`,
  // which the caller writes, and the lease recorder is told (nothing without one or a lease).
  Status end_lease_in(store::WriteTxn& txn, store::JobRow& job, int64_t now);
  // Writes `hb` (a heartbeat answered from memory) into `job`: its progress, and its lease's
  // expiry moved to at least hb.last_ms + the timeout; the record learns it when this commits.
  Status store_heartbeat_in(store::WriteTxn& txn, store::JobRow job, const LiveHeartbeat& hb);
  // The reply to an accepted heartbeat, shared by both paths of heartbeat_async.
  void answer_heartbeat(int64_t job_id, const HeartbeatReport& report, Expected<HeartbeatReply> reply,
                        const std::function<void(Expected<HeartbeatReply>)>& done);
  void touch_worker(int64_t worker_id);

  store::Store& store_;
  const Clock& clock_;
  std::unique_ptr<JobMatcher> matcher_;
  ServiceOptions options_;
  SubmitAdmission* admission_ = nullptr;
  LeaseRecorder* lease_recorder_ = nullptr;
  Log* log_ = &stderr_log();
  PassLog expiry_log_{"lease expiry"};
  PassLog silent_workers_log_{"marking silent workers lost"};
  PassLog unclaimed_log_{"unplacing jobs no worker claimed"};
  Feasibility* feasibility_ = nullptr;
  std::function<void(int64_t)> lease_observer_;
  std::function<void(int64_t)> queued_observer_;
  std::function<void(int64_t, int64_t, const std::string&)> heartbeat_observer_;
  std::function<void(int64_t, int64_t, const std::string&)> completion_observer_;
  std::function<void(int64_t)> worker_observer_;

  JobMoves moves_;  // its own lock, never taken with mu_
  LiveLeases live_;  // its own lock, never taken with mu_

  mutable Mutex mu_;
  JobQueue queue_ JOBCTL_GUARDED_BY(mu_);
  std::list<Waiter> waiters_ JOBCTL_GUARDED_BY(mu_);  // FIFO: the longest-waiting worker is offered first
  std::unordered_map<int64_t, WorkerCapabilities> workers_ JOBCTL_GUARDED_BY(mu_);
  uint64_t next_waiter_id_ JOBCTL_GUARDED_BY(mu_) = 1;
  bool shutting_down_ JOBCTL_GUARDED_BY(mu_) = false;
  int64_t next_expiry_check_ms_ JOBCTL_GUARDED_BY(mu_) = 0;  // tick() runs expire_leases() when due
};

}  // namespace jobctl::daemon::jobs
