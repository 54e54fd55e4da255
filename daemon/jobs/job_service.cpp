#include "daemon/jobs/job_service.h"

#include <algorithm>
#include <future>
#include <utility>

#include <nlohmann/json.hpp>

#include "cost/gpu_specs.h"
#include "daemon/jobs/job_transition.h"
#include "daemon/jobs/lease_fence.h"
#include "scheduler/job_state.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::jobs {

using nlohmann::json;
using scheduler::can_transition;
using scheduler::is_terminal;
using scheduler::to_string;
using store::WriteTxn;

namespace {

std::string job_ref(int64_t id) { return "job " + std::to_string(id); }

Error job_not_found(int64_t id) {
  return make_error(ErrorCode::not_found, job_ref(id) + " does not exist");
}

Error worker_not_found(int64_t id) {
  return make_error(ErrorCode::not_found, "worker " + std::to_string(id) + " is not registered", "worker_id");
}

QueuedJob queued_from(const store::JobRow& row) {
  QueuedJob q{row.id, row.priority, row.created_ms, row.resource_gpu, row.resource_gpus, {}, {}, {}, false};
  q.command = is_command_spec(row.spec_json);
  if (row.state == JobState::placed) set_placement_fields(row, q);
  return q;
}

// Heartbeats move a worker's last_seen_ms forward in steps of at least this much.
constexpr int64_t kLastSeenResolutionMs = 10'000;

// The blocking form of a call that answers through a callback: starts it with a callback that
// fulfils a promise, and waits. Not from the store's writer thread (the answer comes from there).
template <class T, class Start>
Expected<T> wait_for_answer(Start start) {
  std::promise<Expected<T>> answer;
  auto future = answer.get_future();
  start([&answer](Expected<T> r) { answer.set_value(std::move(r)); });
  return future.get();
}

json lease_detail(const LeaseRef& l) { return {{"worker_id", l.worker_id}, {"epoch", l.epoch}}; }

// The GPUs a leased job takes on the worker: resources.gpus of the offered ones (`caps.gpus`, the
// worker's GPUs `indices`) that its request names — all of them match a model request, since
// the matcher chose the job for them — none for a CPU job or a CPU-only worker.
std::vector<int> gpus_taken(const std::string& resource_gpu, int resource_gpus, const WorkerCapabilities& caps,
                            const std::vector<int>& indices) {
  std::vector<int> out;
  auto request = cost::parse_gpu_request(resource_gpu);
  if (!request || request->kind == cost::GpuRequest::Kind::cpu || caps.gpus.empty()) return out;
  const size_t want = static_cast<size_t>(std::max(resource_gpus, 1));
  for (size_t k = 0; k < caps.gpus.size() && k < indices.size() && out.size() < want; ++k) {
    const cost::GpuSpec* spec = caps.gpus[k].identity();
    if (request->kind == cost::GpuRequest::Kind::any || (spec && request->matches(*spec))) out.push_back(indices[k]);
  }
  return out;
}

}  // namespace

JobService::JobService(store::Store& store, const Clock& clock, std::unique_ptr<JobMatcher> matcher,
                       ServiceOptions options)
    : store_(store),
      clock_(clock),
      matcher_(std::move(matcher)),
      options_(options),
      // Stored every half timeout: a worker heartbeating more often than that renews the stored
      // expiry before it passes; the expiry pass renews from memory for one that does not.
      live_(int64_t{options.lease_timeout_s} * 1000, int64_t{options.lease_timeout_s} * 500) {}

JobService::~JobService() { shutdown(); }

Status JobService::start() {
  // A restarted daemon gives every lease one lease timeout to be renewed, so workers that kept
  // running while it was down reconnect instead of losing their jobs (docs/recovery.md).
  const int64_t grace_until = clock_.now_ms() + int64_t{options_.lease_timeout_s} * 1000;
  if (auto st = store_.write([grace_until](WriteTxn& txn) -> Status {
        auto n = txn.extend_active_leases(grace_until);
        return n ? Status{} : Status{n.error()};
      });
      !st)
    return st;
  auto queued = store_.queued_jobs();
  if (!queued) return queued.error();
  auto placed = store_.placed_waiting_jobs();  // placed, not leased yet (placement_passes.h)
  if (!placed) return placed.error();
  MutexLock lock(mu_);
  for (const auto& q : *queued) queue_.insert(q);
  for (const auto& q : *placed) queue_.insert(q);
  return {};
}

size_t JobService::queued_count() const {
  MutexLock lock(mu_);
  return queue_.size();
}

size_t JobService::waiting_workers() const {
  MutexLock lock(mu_);
  return waiters_.size();
}

// ------------------------------------------------------------------ jobs

Expected<JobRow> JobService::submit_job(std::string_view spec_json, const SubmitContext& context) {
  return wait_for_answer<JobRow>([&](auto done) { submit_job_async(spec_json, context, std::move(done)); });
}

void JobService::submit_job_async(std::string_view spec_json, const SubmitContext& context,
                                  std::function<void(Expected<JobRow>)> done) {
  auto spec = train::parse_job_spec(spec_json);
  if (!spec) return done(spec.error());
  // The GPU name must be one the table knows (train/ builds alone, so the spec parser cannot
  // check it); the stored request is its canonical text ("rtx 4090" -> "RTX4090").
  auto gpu = cost::parse_gpu_request(spec->resources.gpu);
  if (!gpu) return done(gpu.error());
  // Nothing could ever run it (no machine has the model, enough GPUs or the memory): refused now,
  // with the field and the reason, unless the spec asks to wait for a machine that may come.
  if (feasibility_ && !spec->placement.queue_if_unplaceable)
    if (auto st = feasibility_->check(*spec); !st) return done(st.error());
  store::JobRow row;
  row.name = spec->name;
  row.spec_json = train::to_json(*spec);
  row.state = JobState::queued;
  row.priority = spec->priority;
  row.resource_gpu = gpu->name();
  row.resource_gpus = spec->resources.gpus;
  row.created_ms = row.updated_ms = clock_.now_ms();
  auto change = [this, row = std::move(row), context](WriteTxn& txn) -> Expected<JobRow> {
    if (!context.idempotency_key.empty()) {  // a retried submit: the first job, unchanged
      auto prior = txn.job_by_idempotency_key(context.owner, context.idempotency_key);
      if (!prior) return prior.error();
      if (*prior) {
        auto first = txn.job(**prior);
        if (!first) return first.error();
        if (*first) return std::move(**first);
      }
    }
    JobRow r = row;
    auto id = txn.insert_job(r);
    if (!id) return id.error();
    r.id = *id;
    store::JobEventRow ev;
    ev.job_id = r.id;
    ev.time_ms = r.created_ms;
    ev.type = "submitted";
    ev.to_state = JobState::queued;
    ev.detail_json = json{{"priority", r.priority}, {"gpu", r.resource_gpu}}.dump();
    if (auto seq = txn.append_event(ev); !seq) return seq.error();
    if (!context.owner.empty() || !context.idempotency_key.empty())
      if (auto st = txn.set_job_submitter(r.id, context.owner, context.idempotency_key); !st) return st.error();
    if (admission_)  // per-user limits may refuse (rolls back) or hold the job (auth_admission.h)
      if (auto st = admission_->admit(txn, r, context); !st) return st.error();
    if (r.state == JobState::queued) txn.on_commit([this, q = queued_from(r)] { on_job_queued(q); });
    return r;
  };
  store_.write_value_async<JobRow>(std::move(change), std::move(done));
}

Expected<JobPage> JobService::list_jobs(const JobListRequest& request) {
  store::JobQuery q;
  q.state = request.state;
  q.after_id = request.after_id;
  q.owner = request.owner;
  q.limit = std::clamp(request.limit, 1, options_.max_list_limit) + 1;  // one more: is there a next page?
  auto rows = store_.list_jobs(q);
  if (!rows) return rows.error();
  JobPage page;
  page.jobs = std::move(*rows);
  for (auto& job : page.jobs) add_newest_heartbeat(job);
  if (static_cast<int>(page.jobs.size()) == q.limit) {
    page.jobs.pop_back();
    page.next_after = page.jobs.back().id;
  }
  return page;
}

Expected<JobDetail> JobService::get_job(int64_t id) {
  auto r = store_.get_job_with_events(id);
  if (!r) return r.error();
  if (!*r) return job_not_found(id);
  auto ledger = store_.ledger_rows_of_job(id);
  if (!ledger) return ledger.error();
  add_newest_heartbeat((*r)->first);
  return JobDetail{std::move((*r)->first), std::move((*r)->second), std::move(*ledger)};
}

Expected<JobRow> JobService::cancel_job(int64_t id) {
  const int64_t now = clock_.now_ms();
  return store_.write_value<JobRow>([this, id, now](WriteTxn& txn) -> Expected<JobRow> {
    auto found = txn.job(id);
    if (!found) return found.error();
    if (!*found) return job_not_found(id);
    JobRow job = std::move(**found);
    if (job.state == JobState::cancelled) return job;  // already done: cancelling is idempotent
    if (is_terminal(job.state))
      return make_error(ErrorCode::conflict, job_ref(id) + " already " +
                                        std::string(to_string(job.state)) + "; it cannot be cancelled");
    // Queued and placed-but-not-leased jobs are both in the in-memory queue.
    const bool was_queued = job.state == JobState::queued || job.awaiting_lease();
    if (!was_queued)
      if (auto st = end_lease_in(txn, job, now); !st) return st.error();
    job.lease_expires_ms.reset();
    if (auto st = transition_job(txn, job, JobState::cancelled, "cancelled", json{{"by", "user"}}, now); !st)
      return st.error();
    if (was_queued) txn.on_commit([this, id] { on_job_left_queue(id); });
    txn.on_commit([this, id] { moves_.forget(id); });
    return job;
  });
}

// ------------------------------------------------------------------ workers

Expected<WorkerRegistered> JobService::register_worker(const WorkerRegistration& request) {
  store::WorkerRow row;
  row.name = request.name;
  row.capabilities = request.capabilities;
  row.registered_ms = row.last_seen_ms = clock_.now_ms();
  row.state = store::WorkerState::active;
  row.secret_hash = request.secret_hash;
  auto id = store_.write_value<int64_t>([row](WriteTxn& txn) { return txn.insert_worker(row); });
  if (!id) return id.error();
  {
    MutexLock lock(mu_);
    workers_[*id] = request.capabilities;
  }
  if (feasibility_) feasibility_->add_worker(*id, request.name, request.capabilities);
  if (worker_observer_) worker_observer_(*id);
  return WorkerRegistered{*id, options_.heartbeat_interval_s, options_.lease_timeout_s,
                          options_.max_lease_wait_s};
}

Expected<std::vector<WorkerInfo>> JobService::list_workers(const std::optional<std::string>& owner,
                                                           int64_t after_id, int64_t limit) {
  auto rows = store_.list_workers(after_id, limit);
  if (!rows) return rows.error();
  auto leases = store_.active_leases(owner);
  if (!leases) return leases.error();
  std::unordered_map<int64_t, std::vector<int64_t>> jobs_of;
  for (const auto& [job_id, worker_id] : *leases) jobs_of[worker_id].push_back(job_id);
  const auto heard = live_.last_heard_by_worker();  // newer than the stored last_seen_ms (live_leases.h)
  std::vector<WorkerInfo> out;
  out.reserve(rows->size());
  for (auto& row : *rows) {
    WorkerInfo info;
    info.capabilities = row.capabilities;
    info.job_ids = jobs_of[row.id];
    if (auto h = heard.find(row.id); h != heard.end()) row.last_seen_ms = std::max(row.last_seen_ms, h->second);
    info.row = std::move(row);
    out.push_back(std::move(info));
  }
  return out;
}

Expected<WorkerCapabilities> JobService::worker_capabilities(int64_t worker_id) {
  {
    MutexLock lock(mu_);
    auto it = workers_.find(worker_id);
    if (it != workers_.end()) return it->second;
  }
  // Registered before this daemon started: read it back.
  auto row = store_.get_worker(worker_id);
  if (!row) return row.error();
  if (!*row) return worker_not_found(worker_id);
  MutexLock lock(mu_);
  workers_[worker_id] = (*row)->capabilities;
  return (*row)->capabilities;
}

void JobService::touch_worker(int64_t worker_id) {
  const int64_t now = clock_.now_ms();
  store_.write_async(
      [this, worker_id, now](WriteTxn& txn) -> Status {
        auto w = txn.worker(worker_id);
        if (!w) return w.error();
        if (!*w) return {};
        (*w)->last_seen_ms = now;
        if ((*w)->state == store::WorkerState::lost && worker_observer_)  // a worker marked lost (lease expiry) that asks again is back
          txn.on_commit([this, worker_id] { worker_observer_(worker_id); });
        (*w)->state = store::WorkerState::active;
        return txn.update_worker(**w);
      },
      nullptr);
}

void JobService::lease(int64_t worker_id, int64_t wait_ms, LeaseCallback done,
                       std::optional<std::vector<int>> free_gpus) {
  auto caps = worker_capabilities(worker_id);
  if (!caps) {
    done(caps.error());
    return;
  }
  // What the worker has free now: matching sees only those GPUs.
  std::vector<int> indices;
  if (free_gpus) {
    WorkerCapabilities free = *caps;
    free.gpus.clear();
    for (int k : *free_gpus) {
      if (k < 0 || static_cast<size_t>(k) >= caps->gpus.size()) {
        done(make_error(ErrorCode::invalid_argument,
                        "free_gpus names GPU " + std::to_string(k) + "; worker " + std::to_string(worker_id) +
                            " registered " + std::to_string(caps->gpus.size()),
                        "free_gpus"));
        return;
      }
      if (std::find(indices.begin(), indices.end(), k) != indices.end()) continue;
      indices.push_back(k);
      free.gpus.push_back(caps->gpus[static_cast<size_t>(k)]);
    }
    // A GPU worker with none free asks for nothing (a CPU-only worker has none to give).
    if (!caps->gpus.empty() && free.gpus.empty()) {
      done(std::optional<LeaseGrant>{});
      return;
    }
    caps = std::move(free);
  } else {
    for (size_t k = 0; k < caps->gpus.size(); ++k) indices.push_back(static_cast<int>(k));
  }
  touch_worker(worker_id);
  wait_ms = std::clamp<int64_t>(wait_ms, 0, int64_t{options_.max_lease_wait_s} * 1000);
  Completions later;
  {
    MutexLock lock(mu_);
    if (shutting_down_) {
      later.push_back([d = std::move(done)] { d(std::optional<LeaseGrant>{}); });
    } else {
      // A worker has one long-poll at a time: a new one replaces (and answers) the old.
      for (auto it = waiters_.begin(); it != waiters_.end();) {
        if (it->worker_id == worker_id) {
          later.push_back([d = std::move(it->done)] { d(std::optional<LeaseGrant>{}); });
          it = waiters_.erase(it);
        } else {
          ++it;
        }
      }
      Waiter w{next_waiter_id_++, worker_id, std::move(*caps), std::move(indices), clock_.now_ms() + wait_ms,
               std::move(done)};
      if (!try_assign_locked(w, later)) {
        if (wait_ms == 0)
          later.push_back([d = std::move(w.done)] { d(std::optional<LeaseGrant>{}); });
        else
          waiters_.push_back(std::move(w));
      }
    }
  }
  for (auto& f : later) f();
}

bool JobService::try_assign_locked(Waiter& waiter, Completions& later) {
  auto pick = matcher_->pick(waiter.worker_id, waiter.caps, queue_);
  if (!pick) return false;
  const int64_t job_id = *pick;
  queue_.erase(job_id);  // reserved: no other worker is offered it while the lease commits
  const int64_t now = clock_.now_ms();
  const int64_t expires = now + int64_t{options_.lease_timeout_s} * 1000;
  auto grant = std::make_shared<LeaseGrant>();
  const int64_t worker_id = waiter.worker_id;
  auto change = [this, job_id, worker_id, now, expires, grant, caps = waiter.caps,
                 indices = waiter.gpu_indices](WriteTxn& txn) -> Status {
    auto found = txn.job(job_id);
    if (!found) return found.error();
    // Queued (no placement), or placed by the placement service and not leased yet.
    const bool placed_waiting = *found && (*found)->awaiting_lease();
    if (!*found || ((*found)->state != JobState::queued && !placed_waiting))
      return make_error(ErrorCode::conflict, job_ref(job_id) + " is no longer queued");
    auto w = txn.worker(worker_id);
    if (!w) return w.error();
    if (!*w) return worker_not_found(worker_id);
    JobRow job = std::move(**found);
    if (lease_observer_)  // queue wait: since it was queued (submitted or requeued) until now
      txn.on_commit([this, wait = now - job.updated_ms] { lease_observer_(wait); });
    job.lease_epoch += 1;
    job.worker_id = worker_id;
    job.lease_expires_ms = expires;
    job.progress_json.reset();
    const LeaseRef ref{worker_id, job.lease_epoch};
    const std::vector<int> gpus = gpus_taken(job.resource_gpu, job.resource_gpus, caps, indices);
    json detail = lease_detail(ref);
    detail["gpus"] = gpus;  // which of the worker's GPUs: what the ledger bills
    if (placed_waiting) {  // already placed: the lease is an event, not a change of state
      job.updated_ms = now;
      if (auto st = txn.update_job(job); !st) return st;
      store::JobEventRow ev{job.id, 0, now, "leased", JobState::placed, JobState::placed, detail.dump()};
      if (auto seq = txn.append_event(ev); !seq) return seq.error();
    } else if (auto st = transition_job(txn, job, JobState::placed, "leased", detail, now); !st) {
      return st;
    }
    (*w)->last_seen_ms = now;
    if (auto st = txn.update_worker(**w); !st) return st;
    if (lease_recorder_)
      if (auto st = lease_recorder_->lease_granted(txn, job, **w, gpus, now); !st) return st;
    *grant = LeaseGrant{job.id, job.lease_epoch, job.name, job.spec_json, expires, std::nullopt, gpus};
    // Resume from the newest stored checkpoint: the worker downloads it.
    auto checkpoints = txn.checkpoints(job.id);
    if (!checkpoints) return checkpoints.error();
    if (!checkpoints->empty()) grant->resume = checkpoints->front();
    return {};
  };
  // The waiter moves into the completion; the caller must not use it afterwards.
  auto done = [this, w = std::move(waiter), job_id, grant](Status st) mutable {
    on_lease_done(std::move(w), job_id, std::move(st), grant);
  };
  later.push_back([this, change = std::move(change), done = std::move(done)]() mutable {
    store_.write_async(std::move(change), std::move(done));
  });
  return true;
}

void JobService::on_lease_done(Waiter waiter, int64_t job_id, Status st,
                               const std::shared_ptr<LeaseGrant>& grant) {
  if (st) {
    moves_.leased(job_id);
    waiter.done(std::optional<LeaseGrant>(*grant));
    return;
  }
  if (st.error().code != ErrorCode::conflict) {
    // The job stays queued in the store; put it back in the index unless it changed meanwhile.
    auto row = store_.get_job(job_id);
    if (row && *row && ((*row)->state == JobState::queued || (*row)->awaiting_lease())) {
      MutexLock lock(mu_);
      queue_.insert(queued_from(**row));
    }
    waiter.done(std::move(st).error());
    return;
  }
  // The job was taken out of the queue by something else (e.g. cancelled): try the next one.
  Completions later;
  {
    MutexLock lock(mu_);
    if (shutting_down_ || clock_.now_ms() >= waiter.deadline_ms) {
      later.push_back([d = std::move(waiter.done)] { d(std::optional<LeaseGrant>{}); });
    } else if (!try_assign_locked(waiter, later)) {
      waiters_.push_front(std::move(waiter));
    }
  }
  for (auto& f : later) f();
}

void JobService::dispatch_locked(Completions& later) {
  for (auto it = waiters_.begin(); it != waiters_.end() && !queue_.empty();) {
    if (try_assign_locked(*it, later))
      it = waiters_.erase(it);  // moved into the lease completion
    else
      ++it;
  }
}

void JobService::on_job_queued(const QueuedJob& job) {
  Completions later;
  {
    MutexLock lock(mu_);
    queue_.insert(job);
    dispatch_locked(later);
  }
  for (auto& f : later) f();
  // Not placed yet: ask the placement service (it places on its next tick).
  if (!job.placement_option && queued_observer_) queued_observer_(job.id);
}

void JobService::job_placed(const QueuedJob& job) { on_job_queued(job); }

void JobService::on_job_left_queue(int64_t job_id) {
  MutexLock lock(mu_);
  queue_.erase(job_id);
}

Expected<HeartbeatReply> JobService::heartbeat(int64_t job_id, const HeartbeatReport& report) {
  return wait_for_answer<HeartbeatReply>([&](auto done) { heartbeat_async(job_id, report, std::move(done)); });
}

void JobService::answer_heartbeat(int64_t job_id, const HeartbeatReport& report, Expected<HeartbeatReply> reply,
                                  const std::function<void(Expected<HeartbeatReply>)>& done) {
  if (reply && !reply->cancel) {
    reply->move = moves_.requested(job_id);
    if (report.progress_json && heartbeat_observer_)
      heartbeat_observer_(job_id, report.lease.worker_id, *report.progress_json);  // calibration
  }
  done(std::move(reply));
}

void JobService::heartbeat_async(int64_t job_id, const HeartbeatReport& report,
                                 std::function<void(Expected<HeartbeatReply>)> done) {
  const int64_t now = clock_.now_ms();
  const int64_t expires = now + int64_t{options_.lease_timeout_s} * 1000;
  if (live_.renew(job_id, report.lease, now, report.progress_json)) {
    // Answered from memory: the stored expiry is recent enough (live_leases.h). A cancel or any
    // end of the lease forgets the entry when it commits, so the next heartbeat sees it.
    answer_heartbeat(job_id, report, HeartbeatReply{.cancel = false, .move = false, .lease_expires_ms = expires}, done);
    return;
  }
  auto change = [job_id, report, now, expires](WriteTxn& txn) -> Expected<HeartbeatReply> {
    auto found = txn.job(job_id);
    if (!found) return found.error();
    if (!*found) return job_not_found(job_id);
    JobRow job = std::move(**found);
    if (auto st = check_lease_holder(job, report.lease); !st) return st.error();
    if (job.state == JobState::cancelled) return HeartbeatReply{.cancel = true};
    if (auto st = require_leased_state(job); !st) return st.error();
    if (report.progress_json) job.progress_json = report.progress_json;
    job.lease_expires_ms = expires;
    if (job.state == JobState::placed) {
      if (auto st = transition_job(txn, job, JobState::running, "started", lease_detail(report.lease), now); !st)
        return st.error();
    } else {
      job.updated_ms = now;
      if (auto st = txn.update_job(job); !st) return st.error();
    }
    // The worker's last_seen_ms to within 10 s: rewriting its row on every heartbeat (every 2 s,
    // thousands of workers) would double the write load for a figure people read in seconds.
    auto w = txn.worker(report.lease.worker_id);
    if (!w) return w.error();
    if (*w && now - (*w)->last_seen_ms >= kLastSeenResolutionMs) {
      (*w)->last_seen_ms = now;
      if (auto st = txn.update_worker(**w); !st) return st.error();
    }
    return HeartbeatReply{.cancel = false, .move = false, .lease_expires_ms = expires};
  };
  store_.write_value_async<HeartbeatReply>(
      std::move(change),
      [this, job_id, report, now, expires, done = std::move(done)](Expected<HeartbeatReply> reply) {
        if (reply && !reply->cancel) live_.stored(job_id, report.lease, now, report.progress_json, expires);
        answer_heartbeat(job_id, report, std::move(reply), done);
      },
      store::Durability::relaxed);  // a lost heartbeat is repeated by the next one (store.h)
}

Expected<JobRow> JobService::complete(int64_t job_id, const CompletionReport& report) {
  const int64_t now = clock_.now_ms();
  return store_.write_value<JobRow>([this, job_id, report, now](WriteTxn& txn) -> Expected<JobRow> {
    auto found = txn.job(job_id);
    if (!found) return found.error();
    if (!*found) return job_not_found(job_id);
    JobRow job = std::move(**found);
    if (auto st = check_lease_holder(job, report.lease); !st) return st.error();
    if (job.state == JobState::succeeded) return job;  // a retried report: already recorded
    if (auto st = require_leased_state(job); !st) return st.error();
    if (job.state == JobState::placed) {
      if (auto st = transition_job(txn, job, JobState::running, "started", lease_detail(report.lease), now); !st)
        return st.error();
    }
    job.result_json = report.result_json;
    job.lease_expires_ms.reset();
    json detail = lease_detail(report.lease);
    if (auto st = end_lease_in(txn, job, now); !st) return st.error();
    if (auto st = transition_job(txn, job, JobState::succeeded, "succeeded", detail, now); !st)
      return st.error();
    txn.on_commit([this, job_id, worker_id = report.lease.worker_id, result = report.result_json] {
      moves_.forget(job_id);
      if (completion_observer_) completion_observer_(job_id, worker_id, result);
    });
    return job;
  });
}

Expected<JobRow> JobService::fail(int64_t job_id, const FailureReport& report) {
  const int64_t now = clock_.now_ms();
  return store_.write_value<JobRow>([this, job_id, report, now](WriteTxn& txn) -> Expected<JobRow> {
    auto found = txn.job(job_id);
    if (!found) return found.error();
    if (!*found) return job_not_found(job_id);
    JobRow job = std::move(**found);
    if (auto st = check_lease_holder(job, report.lease); !st) return st.error();
    if (job.state == JobState::failed) return job;  // a retried report: already recorded
    if (auto st = require_leased_state(job); !st) return st.error();
    if (job.state == JobState::placed) {
      if (auto st = transition_job(txn, job, JobState::running, "started", lease_detail(report.lease), now); !st)
        return st.error();
    }
    job.error = report.error;
    job.lease_expires_ms.reset();
    json detail = lease_detail(report.lease);
    detail["error"] = report.error;
    if (auto st = end_lease_in(txn, job, now); !st) return st.error();
    if (auto st = transition_job(txn, job, JobState::failed, "failed", detail, now); !st)
      return st.error();
    txn.on_commit([this, job_id] { moves_.forget(job_id); });
    return job;
  });
}

Expected<bool> JobService::unplace(int64_t job_id, const std::string& reason) {
  const int64_t now = clock_.now_ms();
  return store_.write_value<bool>([this, job_id, reason, now](WriteTxn& txn) -> Expected<bool> {
    auto found = txn.job(job_id);
    if (!found) return found.error();
    if (!*found || !(*found)->awaiting_lease()) return false;
    JobRow job = std::move(**found);
    if (auto st = transition_job(txn, job, JobState::queued, "unplaced", json{{"reason", reason}}, now); !st)
      return st.error();
    txn.on_commit([this, q = queued_from(job)] { on_job_queued(q); });
    return true;
  });
}

Expected<JobRow> JobService::preempt(int64_t job_id, const PreemptionReport& report) {
  const int64_t now = clock_.now_ms();
  const int max_recoveries = options_.max_recoveries;
  return store_.write_value<JobRow>(
      [this, job_id, report, now, max_recoveries](WriteTxn& txn) -> Expected<JobRow> {
        auto found = txn.job(job_id);
        if (!found) return found.error();
        if (!*found) return job_not_found(job_id);
        JobRow job = std::move(**found);
        if (auto st = check_lease(job, report.lease); !st) return st.error();
        json detail = lease_detail(report.lease);
        detail["reason"] = report.reason;
        if (auto st = end_lease_in(txn, job, now); !st) return st.error();
        job.lease_expires_ms.reset();
        // A move is asked for, not suffered: no recovery counted. The request is taken when
        // the change commits (a failed change leaves it for the worker's retry).
        if (moves_.requested(job_id)) {
          if (auto st = transition_job(txn, job, JobState::preempted, "moved", detail, now); !st) return st.error();
          job.worker_id.reset();
          if (auto st = transition_job(txn, job, JobState::queued, "requeued",
                                       json{{"recoveries", job.recoveries}, {"moved", true}}, now);
              !st)
            return st.error();
          txn.on_commit([this, q = queued_from(job)] {
            moves_.given_back(q.id);
            on_job_queued(q);
          });
          return job;
        }
        job.recoveries += 1;
        if (auto st = transition_job(txn, job, JobState::preempted, "preempted", detail, now); !st)
          return st.error();
        if (job.recoveries > max_recoveries) {
          job.error = "preempted " + std::to_string(job.recoveries) +
                      " times (more than max_recoveries " + std::to_string(max_recoveries) +
                      "); last reason: " + report.reason;
          if (auto st = transition_job(txn, job, JobState::failed, "failed", json{{"error", *job.error}}, now); !st)
            return st.error();
          return job;
        }
        job.worker_id.reset();
        if (auto st = transition_job(txn, job, JobState::queued, "requeued",
                                 json{{"recoveries", job.recoveries}}, now);
            !st)
          return st.error();
        txn.on_commit([this, q = queued_from(job)] { on_job_queued(q); });
        return job;
      });
}

Expected<JobRow> JobService::request_move(int64_t job_id, const MoveRequest& request) {
  const int64_t now = clock_.now_ms();
  auto asked = store_.write_value<JobRow>([job_id, request, now](WriteTxn& txn) -> Expected<JobRow> {
    auto found = txn.job(job_id);
    if (!found) return found.error();
    if (!*found) return job_not_found(job_id);
    const JobRow& job = **found;
    if (!job.lease())
      return make_error(ErrorCode::conflict,
                        job_ref(job_id) + " is " + std::string(to_string(job.state)) +
                            (job.state == JobState::placed ? " but not yet leased" : "") +
                            ": only a job a worker holds can move (a queued job is placed anew by itself)");
    json detail{{"to", to_string(request.target)}, {"worker_id", *job.worker_id}, {"epoch", job.lease_epoch}};
    if (!request.reason.empty()) detail["reason"] = request.reason;
    for (const auto& [name, value] : request.figures) detail[name] = value;
    if (auto st = note_job_event(txn, job_id, "move_requested", detail, now); !st) return st.error();
    return job;
  });
  if (asked) moves_.request(job_id, request);
  return asked;
}

// ------------------------------------------------------------------ housekeeping

void JobService::tick() {
  const int64_t now = clock_.now_ms();
  Completions later;
  {
    MutexLock lock(mu_);
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->deadline_ms <= now) {
        later.push_back([d = std::move(it->done)] { d(std::optional<LeaseGrant>{}); });
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& f : later) f();
  bool expiry_due = false;
  {
    MutexLock lock(mu_);
    if (now >= next_expiry_check_ms_ && !shutting_down_) {
      next_expiry_check_ms_ = now + 1000;
      expiry_due = true;
    }
  }
  if (expiry_due) {
    live_.prune(now);
    auto expired = expire_leases();
    expiry_log_.report(expired ? Status{} : Status{expired.error()}, *log_, now);
    auto silent = mark_silent_workers_lost();
    silent_workers_log_.report(silent ? Status{} : Status{silent.error()}, *log_, now);
    auto unclaimed = unplace_unclaimed();
    unclaimed_log_.report(unclaimed ? Status{} : Status{unclaimed.error()}, *log_, now);
  }
}

void JobService::shutdown() {
  Completions later;
  {
    MutexLock lock(mu_);
    shutting_down_ = true;
    for (auto& w : waiters_)
      later.push_back([d = std::move(w.done)] { d(std::optional<LeaseGrant>{}); });
    waiters_.clear();
  }
  for (auto& f : later) f();
}

}  // namespace jobctl::daemon::jobs
