// The jobs and workers logic behind every endpoint, independent of HTTP: the handlers decode a
// request, call one method here, and encode its answer. Tests drive it directly, without sockets.
//
// JobService is the front of four parts, one concern each, that it builds and wires:
//   - LeaseBroker (lease_broker.h): the queue, the workers' long-polls, the grant of leases;
//   - LeaseReports (lease_reports.h): heartbeats and the ends of a lease a worker reports
//     (complete, fail, preempt), the newest heartbeats in memory;
//   - JobCommands (job_commands.h): submit, list, show, cancel, move, unplace; workers' register
//     and list;
//   - Housekeeping (housekeeping.h): the ticker's passes (long-poll deadlines, lease expiry,
//     silent workers, unclaimed placements).
// What they tell the rest of the daemon goes through one JobObserver interface (job_observer.h).
//
// Every step of a job's lifecycle, the lease included, goes through transition_job
// (job_transition.h), checked by scheduler/job_state.h, and writes its job_events row in the same
// transaction (one store change per logical operation). Lease epochs are fencing tokens: a report
// that does not carry the job's current (worker, epoch) is refused with code "stale_epoch" and
// changes nothing. Nothing on the store's writer thread reads the store: commit hooks and
// completions work from what their change recorded.
//
// Ownership: borrows the Store, the Clock and the dependencies (all outlive the service); owns
// the parts, the moves and the observer list. Thread safety: every method is safe from any
// thread. Lease callbacks run on whichever thread completes them (a writer-thread commit, tick(),
// or the caller) and must be quick.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "base/log.h"
#include "daemon/jobs/feasibility.h"
#include "daemon/jobs/housekeeping.h"
#include "daemon/jobs/job_commands.h"
#include "daemon/jobs/job_matcher.h"
#include "daemon/jobs/job_moves.h"
#include "daemon/jobs/job_observer.h"
#include "daemon/jobs/job_wait.h"
#include "daemon/jobs/lease_broker.h"
#include "daemon/jobs/lease_credentials.h"
#include "daemon/jobs/lease_recorder.h"
#include "daemon/jobs/lease_reports.h"
#include "daemon/jobs/protocol.h"
#include "daemon/jobs/service_options.h"
#include "daemon/jobs/submit_admission.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::jobs {

// What the service is built with besides the store, the clock and the matcher. Not owned; each
// must outlive the service.
struct ServiceDependencies {
  // Where failed background passes are written (base/pass_log.h); null: stderr.
  Log* log = nullptr;
  // Told of every lease's start and end inside its transaction (lease_recorder.h: owned-GPU
  // billing). Null: leases are recorded in the jobs only.
  LeaseRecorder* lease_recorder = nullptr;
  // Asked for the owner's registry credential at every lease of a job in an image
  // (lease_credentials.h). Null: leases carry none.
  LeaseCredentials* lease_credentials = nullptr;
};

class JobService {
 public:
  using LeaseCallback = LeaseBroker::LeaseCallback;

  JobService(store::Store& store, const Clock& clock, std::unique_ptr<JobMatcher> matcher,
             ServiceOptions options = {}, ServiceDependencies dependencies = {});
  ~JobService();
  JobService(const JobService&) = delete;
  JobService& operator=(const JobService&) = delete;

  // Gives every lease one timeout to be renewed and loads the queue from the store. Call once
  // before serving.
  Status start();

  // Observers (job_observer.h), added before serving (or at any time; each must outlive the
  // service or be removed first).
  void add_observer(JobObserver* observer) { observers_.add(observer); }
  void remove_observer(JobObserver* observer) { observers_.remove(observer); }
  // Submit checks whose owners are built after the service (job_commands.h): per-user limits and
  // budget holds inside every submit's transaction (submit_admission.h), and the refusal of what
  // nothing could ever run (feasibility.h). Null: none.
  void set_admission(SubmitAdmission* admission) { commands_.set_admission(admission); }
  void set_feasibility(Feasibility* feasibility) { commands_.set_feasibility(feasibility); }

  // ---- jobs (job_commands.h)
  // Validates the spec (train::parse_job_spec), stores its canonical form, queues it.
  // `context` (auth): the owner is stored with the job; a non-empty idempotency key
  // already used by this owner returns that first job unchanged instead of a new one.
  Expected<JobRow> submit_job(std::string_view spec_json, const SubmitContext& context = {});
  // The same without blocking: the spec is checked on the calling thread, and `done` runs on the
  // store's writer thread once the job is durable (or with the error). It must be quick.
  void submit_job_async(std::string_view spec_json, const SubmitContext& context,
                        std::function<void(Expected<JobRow>)> done) {
    commands_.submit_job_async(spec_json, context, std::move(done));
  }
  // A sweep: one job per case, stored together or not at all (job_commands.h).
  void submit_array_async(std::string_view spec_json, const SubmitContext& context,
                          std::function<void(Expected<std::vector<JobRow>>)> done) {
    commands_.submit_array_async(spec_json, context, std::move(done));
  }
  Expected<std::vector<JobRow>> submit_array(std::string_view spec_json, const SubmitContext& context = {});
  Expected<JobPage> list_jobs(const JobListRequest& request) { return commands_.list_jobs(request); }
  Expected<JobDetail> get_job(int64_t id) { return commands_.get_job(id); }
  // Why each waiting job among `jobs` waits, its queue position and expected start (job_wait.h).
  Expected<std::map<int64_t, JobWait>> waits(const std::vector<JobRow>& jobs) {
    std::set<int64_t> ids;
    for (const auto& j : jobs)
      if (is_waiting(j)) ids.insert(j.id);
    const std::shared_ptr<const FairSharePlaces> fair_share = fair_share_places_.current();
    return job_waits(store_, jobs, broker_.queue_places(ids), clock_.now_ms(), fair_share.get());
  }
  // Every waiting job's place in the fair-share order, as the placement pass computed it last
  // (placement/reservation_pass.h); nullptr: fair share off, or nothing waits.
  void publish_fair_share_places(std::shared_ptr<const FairSharePlaces> places) {
    fair_share_places_.publish(std::move(places));
  }
  // A code bundle's stored size (nullopt: not stored, or deleted after its retention).
  Expected<std::optional<int64_t>> bundle_bytes(const std::string& sha256) { return store_.bundle_size(sha256); }
  // Any non-terminal job becomes cancelled (a worker running it learns on its next heartbeat);
  // cancelling a cancelled job is a no-op; a succeeded or failed one is a conflict.
  Expected<JobRow> cancel_job(int64_t id) { return commands_.cancel_job(id); }
  // Cancels a queued job whose dependency failed (job_dependencies.h), the reason on its event.
  Expected<JobRow> cancel_for_dependency(int64_t id, const std::string& reason) { return commands_.cancel_job(id, reason); }
  // Cancels the job array's jobs that have not ended; all of its jobs as they now are.
  Expected<std::vector<JobRow>> cancel_array(int64_t array_id, const std::optional<std::string>& owner) {
    return commands_.cancel_array(array_id, owner);
  }
  // Asks a placed or running job's worker to checkpoint and give the job back (job_moves.h): the
  // next heartbeat reply says `move`. Records a `move_requested` event. Errors: not_found; conflict
  // when the job is not leased (queued, placed on nothing yet, or ended).
  Expected<JobRow> request_move(int64_t job_id, const MoveRequest& request) {
    return commands_.request_move(job_id, request);
  }
  // Whether the job is asked to move and has not been given back yet.
  bool move_requested(int64_t job_id) const { return moves_.requested(job_id); }
  // The option a moved job must be placed on (placement asks; anywhere when it was not moved).
  MoveTarget move_target(int64_t job_id) const { return moves_.target(job_id); }
  // A placed job that no worker has taken goes back to the queue unplaced (its cloud instance
  // could not be launched), with an `unplaced` event giving the reason; placement re-places it.
  // A job in any other state is left alone (false).
  Expected<bool> unplace(int64_t job_id, const std::string& reason) { return commands_.unplace(job_id, reason); }
  // A queued job, or a placed one no worker has taken, is held (`held`, with `detail`: why) and
  // offered to no worker; a job in any other state is left alone (false).
  Expected<bool> hold_waiting(int64_t job_id, const nlohmann::json& detail) {
    return commands_.hold_waiting(job_id, detail);
  }
  // The placement service placed a job: its matching entry (with the chosen option) replaces the
  // unplaced one and waiting workers are offered it.
  void job_placed(const QueuedJob& job) { broker_.job_queued(job); }

  // ---- workers (job_commands.h, lease_broker.h)
  // A registration naming a machine (capabilities.machine_id) that older workers named too
  // replaces them: their jobs lose their lease at once and they are marked gone
  // (Housekeeping::retire_replaced_workers).
  Expected<WorkerRegistered> register_worker(const WorkerRegistration& request) {
    auto registered = commands_.register_worker(request);
    if (!registered) return registered;
    auto released = housekeeping_.retire_replaced_workers(registered->worker_id, request.capabilities.machine_id);
    if (!released) return released.error();
    return registered;
  }
  // The workers with id > after_id (at most `limit`; negative: all), in id order, with the jobs
  // each holds now (only `owner`'s jobs when given: a user's view).
  Expected<std::vector<WorkerInfo>> list_workers(const std::optional<std::string>& owner = std::nullopt,
                                                 int64_t after_id = 0, int64_t limit = -1) {
    return commands_.list_workers(owner, after_id, limit);
  }
  // Offers the worker a fitting job now, or waits up to wait_ms for one (0: do not wait).
  // `free_gpus`: the indices (into its registered GPUs) of the GPUs it has free now; only jobs
  // that fit those are offered, and the lease names the ones the job takes (LeaseGrant::gpus).
  // None: all of them (a worker that runs one job at a time).
  // `rendezvous_port`: a TCP port free on the worker's machine now (0: none said), the master
  // port of a gang whose rank 0 it becomes.
  void lease(int64_t worker_id, int64_t wait_ms, LeaseCallback done,
             std::optional<std::vector<int>> free_gpus = std::nullopt, int rendezvous_port = 0) {
    broker_.lease(worker_id, wait_ms, std::move(done), std::move(free_gpus), rendezvous_port);
  }

  // ---- lease reports (lease_reports.h)
  Expected<HeartbeatReply> heartbeat(int64_t job_id, const HeartbeatReport& report);
  // The same without blocking. Most heartbeats are answered from memory, on the calling thread
  // (live_leases.h); the others when their store change commits, on the store's writer thread.
  // `done` must be quick either way.
  void heartbeat_async(int64_t job_id, const HeartbeatReport& report,
                       std::function<void(Expected<HeartbeatReply>)> done) {
    reports_.heartbeat_async(job_id, report, std::move(done));
  }
  Expected<JobRow> complete(int64_t job_id, const CompletionReport& report) { return reports_.complete(job_id, report); }
  Expected<JobRow> fail(int64_t job_id, const FailureReport& report) { return reports_.fail(job_id, report); }
  // The worker gives the job back (it is shutting down or its machine is being reclaimed): the
  // job goes running -> preempted -> queued and counts a recovery (or fails past the maximum).
  // A job asked to move (request_move) goes running -> preempted -> queued with a `moved` event
  // instead, and counts no recovery.
  Expected<JobRow> preempt(int64_t job_id, const PreemptionReport& report) { return reports_.preempt(job_id, report); }
  // The image a lease runs, as its worker resolved it (lease_reports.h).
  Expected<JobRow> report_image(int64_t job_id, const ImageReport& report) { return reports_.report_image(job_id, report); }
  // A job or a lease read from the store, given its running lease's newest heartbeat (progress,
  // and a job's lease expiry), which the store may have only up to half a lease timeout later
  // (live_leases.h). The job views do this; so must whatever else reads a running job's progress.
  void add_newest_heartbeat(store::JobRow& job) const { reports_.add_newest_heartbeat(job); }
  void add_newest_heartbeat(store::LeaseSummary& lease) const { reports_.add_newest_heartbeat(lease); }
  // Stores the newest heartbeat (progress, expiry) of every lease whose stored copy is older
  // (live_leases.h): at shutdown, once no request is served any more, so a restart loses none.
  Status store_live_heartbeats() { return reports_.store_live_heartbeats(); }

  // ---- housekeeping (housekeeping.h)
  // On the daemon's ticker: completes long-polls whose deadline has passed, and (at most once a
  // second) expires leases, marks silent workers lost and unplaces unclaimed jobs.
  void tick() { housekeeping_.tick(); }
  // Every placed or running job whose lease was not renewed before its expiry goes running ->
  // preempted -> queued (its latest checkpoint is named by the next lease), counts a recovery
  // (failing past max_recoveries), and its worker is marked lost. Returns how many expired.
  Expected<int> expire_leases() { return housekeeping_.expire_leases(); }
  // The machine under a worker is gone (its cloud instance was reclaimed or terminated): every
  // job leased to it is handled as an expired lease at once. Returns how many were released.
  Expected<int> release_worker_leases(int64_t worker_id, const std::string& reason) {
    return housekeeping_.release_worker_leases(worker_id, reason);
  }
  // An active worker silent for longer than lease_timeout_s, and not in a long-poll now, is
  // marked lost, which takes it out of placement until it asks again. Returns how many.
  Expected<int> mark_silent_workers_lost() { return housekeeping_.mark_silent_workers_lost(); }
  // A job placed on a local pool that no worker has taken within lease_timeout_s after the wait
  // its placement expected is unplaced, so placement places it again. Returns how many.
  Expected<int> unplace_unclaimed() { return housekeeping_.unplace_unclaimed(); }
  // Completes every waiting long-poll with "no job" and refuses new waits. Idempotent.
  void shutdown() { broker_.shutdown(); }

  const ServiceOptions& options() const { return options_; }
  size_t queued_count() const { return broker_.queued_count(); }
  size_t waiting_workers() const { return broker_.waiting_workers(); }
  // Heartbeats answered while the store could not write them (lease_reports.h).
  int64_t held_heartbeats() const { return reports_.held_heartbeats(); }

 private:
  store::Store& store_;
  const Clock& clock_;
  const ServiceOptions options_;
  // Declared in dependency order: each part borrows those above it.
  JobObservers observers_;
  JobMoves moves_;
  LeaseBroker broker_;
  LeaseReports reports_;
  JobCommands commands_;
  Housekeeping housekeeping_;
  FairSharePlaceBoard fair_share_places_;
};

}  // namespace jobctl::daemon::jobs
