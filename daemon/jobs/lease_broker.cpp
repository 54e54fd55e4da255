#include "daemon/jobs/lease_broker.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "cost/gpu_specs.h"
#include "daemon/jobs/job_service_support.h"
#include "daemon/jobs/job_transition.h"

namespace jobctl::daemon::jobs {

using nlohmann::json;
using store::WriteTxn;

namespace {

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

LeaseBroker::LeaseBroker(store::Store& store, const Clock& clock, std::unique_ptr<JobMatcher> matcher,
                         const ServiceOptions& options, LeaseRecorder* recorder, LeaseCredentials* credentials,
                         JobMoves& moves, JobObserver& observer)
    : store_(store),
      clock_(clock),
      matcher_(std::move(matcher)),
      options_(options),
      recorder_(recorder),
      credentials_(credentials),
      moves_(moves),
      observer_(observer),
      contacts_(clock.steady_ms()) {}

Status LeaseBroker::load() {
  auto queued = store_.queued_jobs();
  if (!queued) return queued.error();
  auto placed = store_.placed_waiting_jobs();  // placed, not leased yet (placement_passes.h)
  if (!placed) return placed.error();
  auto vacant = store_.gang_vacancies();
  if (!vacant) return vacant.error();
  std::vector<GangVacancy> vacancies;
  for (const auto& v : *vacant) {
    auto job = store_.get_job(v.job_id);
    if (!job) return job.error();
    if (!*job) continue;
    auto members = store_.gang_members(v.job_id);
    if (!members) return members.error();
    GangVacancy g{queued_from(**job), v.rank, v.epoch, {}};
    set_placement_fields(**job, g.job);
    for (const auto& m : *members)
      if (!m.vacant()) g.nodes.insert(m.worker_id);
    if ((*job)->worker_id) g.nodes.insert(*(*job)->worker_id);
    vacancies.push_back(std::move(g));
  }
  MutexLock lock(mu_);
  for (const auto& q : *queued) queue_.insert(q);
  for (const auto& q : *placed) queue_.insert(q);
  for (auto& v : vacancies) vacancies_[{v.job.id, v.rank}] = std::move(v);
  return {};
}

size_t LeaseBroker::queued_count() const {
  MutexLock lock(mu_);
  return queue_.size();
}

std::map<int64_t, QueuePlace> LeaseBroker::queue_places(const std::set<int64_t>& ids) const {
  MutexLock lock(mu_);
  return jobs::queue_places(queue_, ids);
}

size_t LeaseBroker::waiting_workers() const {
  MutexLock lock(mu_);
  return waiters_.size();
}

std::vector<int64_t> LeaseBroker::waiting_worker_ids() const {
  MutexLock lock(mu_);
  std::vector<int64_t> out;
  out.reserve(waiters_.size());
  for (const auto& w : waiters_) out.push_back(w.worker_id);
  return out;
}

bool LeaseBroker::shutting_down() const {
  MutexLock lock(mu_);
  return shutting_down_;
}

void LeaseBroker::remember_worker(int64_t worker_id, const WorkerCapabilities& caps) {
  contacts_.heard(worker_id, clock_.steady_ms(), clock_.now_ms());  // registered: heard from
  MutexLock lock(mu_);
  workers_[worker_id] = caps;
}

void LeaseBroker::retire_worker(int64_t worker_id) {
  MutexLock lock(mu_);
  workers_.erase(worker_id);
  retired_.insert(worker_id);
}

namespace {

Error worker_replaced(int64_t id) {
  return make_error(ErrorCode::conflict,
                    "worker " + std::to_string(id) + " was replaced by a newer registration of its machine; register again",
                    "worker_id");
}

}  // namespace

Expected<WorkerCapabilities> LeaseBroker::worker_capabilities(int64_t worker_id) {
  {
    MutexLock lock(mu_);
    if (retired_.count(worker_id)) return worker_replaced(worker_id);
    auto it = workers_.find(worker_id);
    if (it != workers_.end()) return it->second;
  }
  // Registered before this daemon started: read it back (on the asking worker's thread).
  auto row = store_.get_worker(worker_id);
  if (!row) return row.error();
  if (!*row) return worker_not_found(worker_id);
  if ((*row)->state == store::WorkerState::gone) return worker_replaced(worker_id);
  MutexLock lock(mu_);
  workers_[worker_id] = (*row)->capabilities;
  return (*row)->capabilities;
}

void LeaseBroker::touch_worker(int64_t worker_id) {
  const int64_t now = clock_.now_ms();
  contacts_.heard(worker_id, clock_.steady_ms(), now);
  store_.write_async(
      [this, worker_id, now](WriteTxn& txn) -> Status {
        auto w = txn.worker(worker_id);
        if (!w) return w.error();
        if (!*w) return {};
        (*w)->last_seen_ms = now;
        // Replaced by a newer registration of its machine: it stays gone (its leases went).
        if ((*w)->state == store::WorkerState::gone) return txn.update_worker(**w);
        if ((*w)->state == store::WorkerState::lost)  // a worker marked lost (lease expiry) that asks again is back
          txn.on_commit([this, worker_id] { observer_.worker_available(worker_id); });
        (*w)->state = store::WorkerState::active;
        return txn.update_worker(**w);
      },
      nullptr);
}

void LeaseBroker::lease(int64_t worker_id, int64_t wait_ms, LeaseCallback done,
                        std::optional<std::vector<int>> free_gpus, int rendezvous_port) {
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
      Waiter w{next_waiter_id_++, worker_id, std::move(*caps), std::move(indices), clock_.steady_ms() + wait_ms,
               rendezvous_port, std::move(done)};
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

std::set<int64_t> LeaseBroker::passed_gangs_locked(int64_t now_ms) {
  std::set<int64_t> passed;
  const int64_t hold_ms = int64_t{options_.gang_assembly_s} * 1000;
  for (auto it = gang_holds_.begin(); it != gang_holds_.end();) {
    if (queue_.find(it->first) == queue_.end()) {  // leased, cancelled or gone
      it = gang_holds_.erase(it);
      continue;
    }
    // Odd periods since the gang began to hold: it lets its workers go.
    if (((now_ms - it->second) / hold_ms) % 2 == 1) passed.insert(it->first);
    ++it;
  }
  return passed;
}

bool LeaseBroker::try_assign_locked(Waiter& waiter, Completions& later) {
  if (try_fill_vacancy_locked(waiter, later)) return true;
  const int64_t now = clock_.now_ms();
  auto pick = matcher_->pick(waiter.worker_id, waiter.caps, queue_, passed_gangs_locked(now));
  if (!pick) return false;
  const int64_t job_id = *pick;
  auto entry = queue_.find(job_id);
  if (entry == queue_.end()) return false;
  if (entry->nodes > 1) return try_assign_gang_locked(waiter, *entry, later);
  QueuedJob reserved = *entry;
  queue_.erase(job_id);  // reserved: no other worker is offered it while the lease commits
  std::vector<Waiter> nodes;
  nodes.push_back(std::move(waiter));
  commit_lease_locked(std::move(reserved), std::move(nodes), later);
  return true;
}

bool LeaseBroker::try_assign_gang_locked(Waiter& waiter, const QueuedJob& job, Completions& later) {
  // Every node at once or none: the other nodes come from the workers already waiting, each a
  // different worker the matcher offers the job to.
  std::vector<std::list<Waiter>::iterator> others;
  std::set<int64_t> workers{waiter.worker_id};
  for (auto it = waiters_.begin(); it != waiters_.end() && static_cast<int>(others.size()) + 1 < job.nodes; ++it) {
    if (&*it == &waiter || workers.count(it->worker_id)) continue;
    if (!matcher_->offers(job, it->worker_id, it->caps)) continue;
    workers.insert(it->worker_id);
    others.push_back(it);
  }
  if (static_cast<int>(others.size()) + 1 < job.nodes) {
    // Not enough yet: this worker waits for the gang (first in its offer order), for a bounded time.
    gang_holds_.try_emplace(job.id, clock_.now_ms());
    return false;
  }
  QueuedJob reserved = job;  // `job` is the queue's entry: erased next
  queue_.erase(reserved.id);
  gang_holds_.erase(reserved.id);
  std::vector<Waiter> nodes;
  nodes.push_back(std::move(waiter));
  for (auto it : others) {
    nodes.push_back(std::move(*it));
    waiters_.erase(it);
  }
  // Rank 0 is a node that brought a free port for the rendezvous (the asking one if it did).
  auto master = std::find_if(nodes.begin(), nodes.end(), [](const Waiter& w) { return w.rendezvous_port > 0; });
  if (master != nodes.end() && master != nodes.begin()) std::iter_swap(nodes.begin(), master);
  commit_lease_locked(std::move(reserved), std::move(nodes), later);
  return true;
}

Expected<LeaseGrant> LeaseBroker::grant_node_in(WriteTxn& txn, const JobRow& job, int64_t worker_id,
                                               const std::vector<int>& gpus,
                                               const std::vector<store::CheckpointRow>& checkpoints, int64_t now,
                                               int64_t expires) {
  auto w = txn.worker(worker_id);
  if (!w) return w.error();
  if (!*w) return worker_not_found(worker_id);
  (*w)->last_seen_ms = now;
  if (auto st = txn.update_worker(**w); !st) return st.error();
  if (recorder_)
    if (auto st = recorder_->lease_granted(txn, job, **w, gpus, now); !st) return st.error();
  auto owner = txn.job_owner(job.id);
  if (!owner) return owner.error();
  LeaseGrant g{job.id,      job.lease_epoch, job.name,    job.spec_json,       expires,
               std::nullopt, gpus,           std::nullopt, owner->value_or(""), std::nullopt};
  if (!checkpoints.empty()) g.resume = checkpoints.front();
  // Every node pulls the image: each node's offer carries the owner's login.
  if (credentials_) {
    auto credential = credentials_->registry_credential_in(txn, job, g.owner, now);
    if (!credential) return credential.error();
    g.registry_credential = std::move(*credential);
  }
  return g;
}

void LeaseBroker::commit_lease_locked(QueuedJob reserved, std::vector<Waiter> nodes, Completions& later) {
  const int64_t job_id = reserved.id;
  const int64_t now = clock_.now_ms();
  const int64_t expires = now + int64_t{options_.lease_timeout_s} * 1000;
  struct Node {
    int64_t worker_id;
    WorkerCapabilities caps;
    std::vector<int> indices;
    int port;
  };
  std::vector<Node> plan;
  for (const Waiter& w : nodes) plan.push_back({w.worker_id, w.caps, w.gpu_indices, w.rendezvous_port});
  auto grants = std::make_shared<std::vector<LeaseGrant>>(nodes.size());
  auto change = [this, job_id, now, expires, grants, plan = std::move(plan)](WriteTxn& txn) -> Status {
    auto found = txn.job(job_id);
    if (!found) return found.error();
    if (!*found) return make_error(ErrorCode::conflict, job_ref(job_id) + " no longer exists");
    JobRow job = std::move(**found);
    const int64_t queue_wait_ms = now - job.updated_ms;  // since it was queued (submitted or requeued)
    std::vector<std::vector<int>> gpus;
    for (const Node& n : plan) gpus.push_back(gpus_taken(job.resource_gpu, job.resource_gpus, n.caps, n.indices));
    const bool gang = plan.size() > 1;
    // which of the worker's GPUs: what the ledger bills. The lease edge refuses (conflict) a job
    // that is no longer queued or placed, or that another worker holds.
    json detail{{"gpus", gpus.front()}};
    if (gang) {
      json ranks = json::array();
      for (size_t r = 0; r < plan.size(); ++r)
        ranks.push_back({{"rank", r}, {"worker_id", plan[r].worker_id}, {"address", plan[r].caps.address},
                         {"gpus", gpus[r]}});
      detail["nodes"] = std::move(ranks);
    }
    if (auto st = transition_job(txn, job, LeaseTaken{plan.front().worker_id, expires}, "leased", detail, now); !st)
      return st;
    // Resume from the newest stored checkpoint: the worker downloads it (every node of a gang).
    auto checkpoints = txn.checkpoints(job.id);
    if (!checkpoints) return checkpoints.error();
    std::optional<protocol::GangRendezvous> rendezvous;
    if (gang) {
      rendezvous.emplace();
      rendezvous->nodes = static_cast<int>(plan.size());
      for (const Node& n : plan) rendezvous->addrs.push_back(n.caps.address);
      rendezvous->master_addr = plan.front().caps.address;
      // A worker that brought no port: torch.distributed's customary one.
      rendezvous->master_port = plan.front().port > 0 ? plan.front().port : 29500;
      rendezvous->gpus_per_node = static_cast<int>(gpus.front().size());
    }
    for (size_t r = 0; r < plan.size(); ++r) {
      auto granted = grant_node_in(txn, job, plan[r].worker_id, gpus[r], *checkpoints, now, expires);
      if (!granted) return granted.error();
      LeaseGrant& g = (*grants)[r];
      g = std::move(*granted);
      if (gang) {
        g.gang = rendezvous;
        g.gang->rank = static_cast<int>(r);
        store::GangMemberRow m{job.id, static_cast<int>(r), plan[r].worker_id, job.lease_epoch, gpus[r],
                               plan[r].caps.address, expires, rendezvous->master_port};
        if (auto st = txn.put_gang_member(m); !st) return st;
      }
    }
    txn.on_commit([this, queue_wait_ms] { observer_.job_leased(queue_wait_ms); });
    return {};
  };
  // The waiters move into the completion; the caller must not use them afterwards.
  auto done = [this, nodes = std::move(nodes), reserved = std::move(reserved), grants](Status st) mutable {
    on_lease_done(std::move(nodes), reserved, std::move(st), grants);
  };
  later.push_back([this, change = std::move(change), done = std::move(done)]() mutable {
    store_.write_async(std::move(change), std::move(done));
  });
}

void LeaseBroker::on_lease_done(std::vector<Waiter> nodes, const QueuedJob& reserved, Status st,
                                const std::shared_ptr<std::vector<LeaseGrant>>& grants) {
  if (st) {
    moves_.leased(reserved.id);
    for (size_t r = 0; r < nodes.size(); ++r) nodes[r].done(std::optional<LeaseGrant>((*grants)[r]));
    return;
  }
  if (st.error().code != ErrorCode::conflict) {
    // The change rolled back: the job is as it was. Its reserved entry goes back in the queue
    // without reading the store (this is the writer thread); if the job changed meanwhile (a
    // cancel), the next lease's change finds out and drops the entry.
    {
      MutexLock lock(mu_);
      queue_.insert(reserved);
    }
    for (auto& w : nodes) w.done(st.error());
    return;
  }
  // The job was taken out of the queue by something else (e.g. cancelled): try the next one.
  Completions later;
  {
    MutexLock lock(mu_);
    for (auto& waiter : nodes) {
      if (shutting_down_ || clock_.steady_ms() >= waiter.deadline_ms) {
        later.push_back([d = std::move(waiter.done)] { d(std::optional<LeaseGrant>{}); });
      } else if (!try_assign_locked(waiter, later)) {
        waiters_.push_front(std::move(waiter));
      }
    }
  }
  for (auto& f : later) f();
}

bool LeaseBroker::try_fill_vacancy_locked(Waiter& waiter, Completions& later) {
  auto it = std::find_if(vacancies_.begin(), vacancies_.end(), [&](const auto& v) {
    return !v.second.nodes.count(waiter.worker_id) && matcher_->offers(v.second.job, waiter.worker_id, waiter.caps);
  });
  if (it == vacancies_.end()) return false;
  GangVacancy vacancy = std::move(it->second);
  vacancies_.erase(it);
  const int64_t now = clock_.now_ms();
  const int64_t expires = now + int64_t{options_.lease_timeout_s} * 1000;
  auto grant = std::make_shared<LeaseGrant>();
  auto change = [this, vacancy, worker_id = waiter.worker_id, caps = waiter.caps, indices = waiter.gpu_indices, now,
                 expires, grant](WriteTxn& txn) -> Status {
    auto found = txn.job(vacancy.job.id);
    if (!found) return found.error();
    const std::string gone = job_ref(vacancy.job.id) + " no longer waits for a node of rank " +
                             std::to_string(vacancy.rank);
    if (!*found || !(*found)->lease() || (*found)->lease_epoch != vacancy.epoch)
      return make_error(ErrorCode::conflict, gone);
    const JobRow& job = **found;
    auto members = txn.gang_members(job.id);
    if (!members) return members.error();
    auto slot = std::find_if(members->begin(), members->end(), [&](const auto& m) { return m.rank == vacancy.rank; });
    if (slot == members->end() || !slot->vacant() || members->front().rank != 0)
      return make_error(ErrorCode::conflict, gone);
    for (const auto& m : *members)
      if (m.worker_id == worker_id) return make_error(ErrorCode::conflict, gone);
    const std::vector<int> gpus = gpus_taken(job.resource_gpu, job.resource_gpus, caps, indices);
    auto checkpoints = txn.checkpoints(job.id);
    if (!checkpoints) return checkpoints.error();
    auto granted = grant_node_in(txn, job, worker_id, gpus, *checkpoints, now, expires);
    if (!granted) return granted.error();
    *grant = std::move(*granted);
    slot->worker_id = worker_id;
    slot->gpus = gpus;
    slot->address = caps.address;
    slot->expires_ms = expires;
    slot->master_port = members->front().master_port;
    if (auto st = txn.put_gang_member(*slot); !st) return st;
    if (auto st = note_job_event(txn, job.id, "node_replaced",
                                 json{{"rank", vacancy.rank}, {"worker_id", worker_id}, {"address", caps.address},
                                      {"gpus", gpus}, {"epoch", job.lease_epoch}},
                                 now);
        !st)
      return st;
    protocol::GangRendezvous g;
    g.rank = vacancy.rank;
    g.nodes = static_cast<int>(members->size());
    for (const auto& m : *members) g.addrs.push_back(m.address);
    g.master_addr = members->front().address;
    g.master_port = members->front().master_port;
    g.gpus_per_node = static_cast<int>(gpus.size());
    grant->gang = std::move(g);
    return {};
  };
  auto done = [this, waiter = std::move(waiter), vacancy, grant](Status st) mutable {
    on_vacancy_done(std::move(waiter), std::move(vacancy), std::move(st), grant);
  };
  later.push_back([this, change = std::move(change), done = std::move(done)]() mutable {
    store_.write_async(std::move(change), std::move(done));
  });
  return true;
}

void LeaseBroker::on_vacancy_done(Waiter waiter, GangVacancy vacancy, Status st,
                                  const std::shared_ptr<LeaseGrant>& grant) {
  if (st) {
    waiter.done(std::optional<LeaseGrant>(*grant));
    return;
  }
  Completions later;
  {
    MutexLock lock(mu_);
    if (st.error().code != ErrorCode::conflict) {
      // Rolled back: the rank is still vacant. (A conflict: the gang moved on, restarted or ended.)
      vacancies_.try_emplace({vacancy.job.id, vacancy.rank}, vacancy);
      later.push_back([d = std::move(waiter.done), e = st.error()] { d(e); });
    } else if (shutting_down_ || clock_.steady_ms() >= waiter.deadline_ms) {
      later.push_back([d = std::move(waiter.done)] { d(std::optional<LeaseGrant>{}); });
    } else if (!try_assign_locked(waiter, later)) {
      waiters_.push_front(std::move(waiter));
    }
  }
  for (auto& f : later) f();
}

void LeaseBroker::node_vacant(GangVacancy vacancy) {
  Completions later;
  {
    MutexLock lock(mu_);
    vacancies_[{vacancy.job.id, vacancy.rank}] = std::move(vacancy);
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (try_fill_vacancy_locked(*it, later))
        it = waiters_.erase(it);
      else
        ++it;
    }
  }
  for (auto& f : later) f();
}

void LeaseBroker::dispatch_locked(Completions& later) {
  for (auto it = waiters_.begin(); it != waiters_.end() && !queue_.empty();) {
    if (try_assign_locked(*it, later))
      it = waiters_.erase(it);  // moved into the lease completion
    else
      ++it;
  }
}

void LeaseBroker::job_queued(const QueuedJob& job) {
  Completions later;
  {
    MutexLock lock(mu_);
    queue_.insert(job);
    dispatch_locked(later);
  }
  for (auto& f : later) f();
  // Not placed yet: ask the placement service (it places on its next tick).
  if (!job.placement_option) observer_.job_needs_placement(job.id);
}

void LeaseBroker::job_left_queue(int64_t job_id) {
  MutexLock lock(mu_);
  queue_.erase(job_id);
}

void LeaseBroker::expire_waits(int64_t steady_now_ms) {
  Completions later;
  {
    MutexLock lock(mu_);
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->deadline_ms <= steady_now_ms) {
        later.push_back([d = std::move(it->done)] { d(std::optional<LeaseGrant>{}); });
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& f : later) f();
}

void LeaseBroker::shutdown() {
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
