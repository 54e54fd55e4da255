// The lease broker: matches workers asking for work with the jobs waiting for one, and grants
// leases (docs/api.md, "The worker protocol").
//
// It holds the in-memory queue (job_queue.h: queued jobs and placed ones no worker holds yet, in
// offer order), the long-polls of the workers waiting for a job, and the capabilities of the
// registered workers. Leases are long-polls that hold no thread: lease() registers a waiter that
// is completed when a fitting job is queued (job_queued(), from a store commit hook), with "no job"
// by expire_waits() once its deadline has passed, or by shutdown().
//
// A grant is the lease edge of the lifecycle (job_transition.h), written in one store change with
// the worker's last_seen_ms, the lease recorder's billing and the resume checkpoint. The job is
// taken out of the queue while that change commits, so no other worker is offered it; the change
// re-checks the job inside its transaction, so a stale queue entry costs one refused attempt.
//
// Ownership: borrows the Store, the Clock, the lease recorder and credentials (may be null), the
// moves and the observer (all outlive the broker); owns the matcher, the queue and the waiters.
// Thread safety: every method is safe from any thread. Lease callbacks run on whichever thread
// completes them (a writer-thread commit, expire_waits(), or the caller) and must be quick; they
// are never called with the broker's mutex held. Nothing here reads the store on the writer
// thread: a lease's completion works from what its change recorded.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "base/mutex.h"
#include "daemon/jobs/job_matcher.h"
#include "daemon/jobs/job_moves.h"
#include "daemon/jobs/job_observer.h"
#include "daemon/jobs/job_queue.h"
#include "daemon/jobs/job_wait.h"
#include "daemon/jobs/lease_credentials.h"
#include "daemon/jobs/lease_recorder.h"
#include "daemon/jobs/protocol.h"
#include "daemon/jobs/service_options.h"
#include "daemon/jobs/worker_contacts.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::jobs {

// A rank of a leased gang whose node was lost while the others go on (LeaseReports::
// vacate_node_in): the broker leases it to a replacement worker under the gang's epoch.
struct GangVacancy {
  QueuedJob job;            // what the matcher offers: the gang's resources and placement
  int rank = 0;
  int64_t epoch = 0;        // the gang's lease
  std::set<int64_t> nodes;  // workers that are nodes of it already (never the replacement)
};

class LeaseBroker {
 public:
  // Callback of lease(): a grant, nullopt (no job before the deadline), or an Error.
  using LeaseCallback = std::function<void(Expected<std::optional<LeaseGrant>>)>;

  LeaseBroker(store::Store& store, const Clock& clock, std::unique_ptr<JobMatcher> matcher, const ServiceOptions& options,
              LeaseRecorder* recorder, LeaseCredentials* credentials, JobMoves& moves, JobObserver& observer);
  LeaseBroker(const LeaseBroker&) = delete;
  LeaseBroker& operator=(const LeaseBroker&) = delete;

  // Loads the queue from the store (queued jobs, and placed ones no worker holds, and the vacant
  // ranks of gangs). Call once before serving.
  Status load() JOBCTL_EXCLUDES(mu_);

  // Offers the worker a fitting job now, or waits up to wait_ms for one (0: do not wait).
  // `free_gpus`: the indices (into its registered GPUs) of the GPUs it has free now (none: all).
  // `rendezvous_port`: a port free on its machine (0: none), a gang's master port if it is rank 0.
  void lease(int64_t worker_id, int64_t wait_ms, LeaseCallback done, std::optional<std::vector<int>> free_gpus,
             int rendezvous_port = 0) JOBCTL_EXCLUDES(mu_);

  // The job entered the queue (submitted, requeued, unplaced, or placed by the placement
  // service): waiting workers are offered it, and an unplaced one is announced to the observer.
  void job_queued(const QueuedJob& job) JOBCTL_EXCLUDES(mu_);
  // The job left the queue other than by a lease (cancelled).
  void job_left_queue(int64_t job_id) JOBCTL_EXCLUDES(mu_);
  // A gang's rank awaits a replacement node (from a store commit hook): waiting workers are
  // offered it before any queued job, since the rest of the gang is running and waiting for it.
  void node_vacant(GangVacancy vacancy) JOBCTL_EXCLUDES(mu_);

  // A worker registered with these capabilities (what its leases are matched against).
  void remember_worker(int64_t worker_id, const WorkerCapabilities& caps) JOBCTL_EXCLUDES(mu_);
  // A newer registration of its machine replaced the worker (Housekeeping::retire_replaced_workers):
  // its lease requests are refused from now on (conflict), so it can never hold a job again.
  void retire_worker(int64_t worker_id) JOBCTL_EXCLUDES(mu_);

  // Completes the long-polls whose deadline (steady clock) has passed with "no job".
  void expire_waits(int64_t steady_now_ms) JOBCTL_EXCLUDES(mu_);
  // Completes every waiting long-poll with "no job" and refuses new waits. Idempotent.
  void shutdown() JOBCTL_EXCLUDES(mu_);
  bool shutting_down() const JOBCTL_EXCLUDES(mu_);

  size_t queued_count() const JOBCTL_EXCLUDES(mu_);
  // Where each of `ids` stands in the queue among the jobs that want the same resources
  // (job_wait.h, queue_places); one walk of the queue.
  std::map<int64_t, QueuePlace> queue_places(const std::set<int64_t>& ids) const JOBCTL_EXCLUDES(mu_);
  size_t waiting_workers() const JOBCTL_EXCLUDES(mu_);
  // The workers in a long-poll now (alive, however long the poll).
  std::vector<int64_t> waiting_worker_ids() const JOBCTL_EXCLUDES(mu_);
  // A worker marked lost is active again (heard from since, worker_liveness.cpp): the observer
  // is told it is available, as when it asks for a lease.
  void worker_back(int64_t worker_id) { observer_.worker_available(worker_id); }
  // When each worker was last heard from (worker_contacts.h): lease requests and registrations
  // here, heartbeats by the lease reports.
  WorkerContacts& contacts() { return contacts_; }
  const WorkerContacts& contacts() const { return contacts_; }

 private:
  struct Waiter {
    uint64_t id = 0;
    int64_t worker_id = 0;
    WorkerCapabilities caps;       // for matching: its free GPUs only
    std::vector<int> gpu_indices;  // caps.gpus[k] is the worker's GPU gpu_indices[k]
    int64_t deadline_ms = 0;       // steady clock
    int rendezvous_port = 0;       // free on its machine when it asked (0: not said)
    LeaseCallback done;
  };
  using Completions = std::vector<std::function<void()>>;

  Expected<WorkerCapabilities> worker_capabilities(int64_t worker_id) JOBCTL_EXCLUDES(mu_);
  void touch_worker(int64_t worker_id);
  // Offers jobs to waiting workers while both remain.
  void dispatch_locked(Completions& later) JOBCTL_REQUIRES(mu_);
  // Reserves a job for the waiter and adds its lease change to `later`, which the caller runs
  // once mu_ is released (a store completion may need mu_ itself). False: nothing for it now
  // (it waits; for a gang first in its offer order, until enough workers wait with it).
  bool try_assign_locked(Waiter& waiter, Completions& later) JOBCTL_REQUIRES(mu_);
  // The gang `job` with `waiter` and the waiting workers it needs besides, if enough wait now:
  // they leave waiters_ (the asking one is the caller's to drop) and the gang's lease is started.
  bool try_assign_gang_locked(Waiter& waiter, const QueuedJob& job, Completions& later) JOBCTL_REQUIRES(mu_);
  // Adds to `later` the one store change that leases `reserved` (out of the queue) to `nodes`
  // (rank order; one for a job on one machine), and answers them when it commits.
  void commit_lease_locked(QueuedJob reserved, std::vector<Waiter> nodes, Completions& later) JOBCTL_REQUIRES(mu_);
  // A vacant gang rank the waiter may fill: its lease change is added to `later` (the vacancy is
  // reserved while it commits). False: none it fits.
  bool try_fill_vacancy_locked(Waiter& waiter, Completions& later) JOBCTL_REQUIRES(mu_);
  // Inside a lease change: the worker takes `job` (already carrying its lease) with `gpus` — seen
  // now, its billing started — and the grant it is answered with, resuming from the newest of
  // `checkpoints`. A gang's rendezvous is the caller's to add.
  Expected<LeaseGrant> grant_node_in(store::WriteTxn& txn, const JobRow& job, int64_t worker_id,
                                     const std::vector<int>& gpus, const std::vector<store::CheckpointRow>& checkpoints,
                                     int64_t now, int64_t expires);
  // On the writer thread: the replacement's lease committed (st ok) or not.
  void on_vacancy_done(Waiter waiter, GangVacancy vacancy, Status st, const std::shared_ptr<LeaseGrant>& grant)
      JOBCTL_EXCLUDES(mu_);
  // The gangs that let their held workers go now (options_.gang_assembly_s); forgets the holds
  // of gangs no longer queued.
  std::set<int64_t> passed_gangs_locked(int64_t now_ms) JOBCTL_REQUIRES(mu_);
  // On the writer thread: the lease of `reserved` committed (st ok) or not.
  void on_lease_done(std::vector<Waiter> nodes, const QueuedJob& reserved, Status st,
                     const std::shared_ptr<std::vector<LeaseGrant>>& grants) JOBCTL_EXCLUDES(mu_);

  store::Store& store_;
  const Clock& clock_;
  const std::unique_ptr<JobMatcher> matcher_;
  const ServiceOptions options_;
  LeaseRecorder* const recorder_;
  LeaseCredentials* const credentials_;  // may be null
  JobMoves& moves_;
  JobObserver& observer_;
  WorkerContacts contacts_;  // its own lock

  mutable Mutex mu_;
  JobQueue queue_ JOBCTL_GUARDED_BY(mu_);
  std::list<Waiter> waiters_ JOBCTL_GUARDED_BY(mu_);  // FIFO: the longest-waiting worker is offered first
  std::unordered_map<int64_t, WorkerCapabilities> workers_ JOBCTL_GUARDED_BY(mu_);
  // Vacant gang ranks by (job, rank); one being filled is out of it until its change commits.
  std::map<std::pair<int64_t, int>, GangVacancy> vacancies_ JOBCTL_GUARDED_BY(mu_);
  std::set<int64_t> retired_ JOBCTL_GUARDED_BY(mu_);  // replaced by their machine's newer worker
  // Gangs first in some waiting worker's offer order that could not gather all their nodes yet:
  // since when they hold workers (passed_gangs_locked bounds it).
  std::map<int64_t, int64_t> gang_holds_ JOBCTL_GUARDED_BY(mu_);
  uint64_t next_waiter_id_ JOBCTL_GUARDED_BY(mu_) = 1;
  bool shutting_down_ JOBCTL_GUARDED_BY(mu_) = false;
};

}  // namespace jobctl::daemon::jobs
