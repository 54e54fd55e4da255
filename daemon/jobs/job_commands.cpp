#include "daemon/jobs/job_commands.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "cost/gpu_specs.h"
#include "cost/workload.h"
#include "daemon/jobs/job_dependencies.h"
#include "daemon/jobs/job_service_support.h"
#include "daemon/jobs/job_transition.h"
#include "scheduler/job_state.h"
#include "train/spec/job_spec.h"
#include "train/spec/job_sweep.h"

namespace jobctl::daemon::jobs {

using nlohmann::json;
using scheduler::is_terminal;
using scheduler::to_string;
using store::WriteTxn;

JobCommands::JobCommands(store::Store& store, const Clock& clock, const ServiceOptions& options, LeaseBroker& broker,
                         LeaseReports& reports, JobMoves& moves, JobObserver& observer)
    : store_(store),
      clock_(clock),
      options_(options),
      broker_(broker),
      reports_(reports),
      moves_(moves),
      observer_(observer) {}

// ------------------------------------------------------------------ jobs

// A spec checked and made into the row it will be stored as (everything a submit decides before
// its transaction), with the context admission may have added to.
struct JobCommands::Prepared {
  JobRow row;
  SubmitContext context;
};

Expected<train::JobSpec> decode_spec_text(std::string_view text) { return train::parse_job_spec(text); }

Expected<JobCommands::Prepared> JobCommands::prepare(std::string_view spec_json, const SubmitContext& submitted) {
  auto spec = decode_spec_text(spec_json);
  if (!spec) return spec.error();
  SubmitContext context = submitted;  // admit_spec may note the job's estimate in it
  if (auto* admission = admission_.load())  // what this submitter may not ask for (a command job: auth_admission.h)
    if (auto st = admission->admit_spec(*spec, context); !st) return st.error();
  // The GPU name must be one the table knows (train/ builds alone, so the spec parser cannot
  // check it); the stored request is its canonical text ("rtx 4090" -> "RTX4090").
  auto gpu = cost::parse_gpu_request(spec->resources.gpu);
  if (!gpu) return gpu.error();
  // Nothing could ever run it (no machine has the model, enough GPUs or the memory): refused now,
  // with the field and the reason, unless the spec asks to wait for a machine that may come.
  if (Feasibility* feasibility = feasibility_.load(); feasibility && !spec->placement.queue_if_unplaceable)
    if (auto st = feasibility->check(*spec); !st) return st.error();
  if (auto st = validate_dependencies(store_, spec->after, context.owner); !st) return st.error();
  store::JobRow row;
  row.name = spec->name;
  row.spec_json = train::to_json(*spec);
  row.state = JobState::queued;
  row.priority = spec->priority;
  row.resource_gpu = gpu->name();
  // The GPUs the job takes: resources.gpus, or with "auto" the least it can run on until placement
  // chooses, per option, the smallest count that holds it (and writes that count here).
  row.resource_gpus = cost::requested_gpus(*spec);
  row.resource_nodes = spec->resources.nodes;
  row.created_ms = row.updated_ms = clock_.now_ms();
  row.spec = std::make_shared<const train::JobSpec>(std::move(*spec));
  return Prepared{std::move(row), std::move(context)};
}

Expected<JobRow> JobCommands::insert_prepared(WriteTxn& txn, const Prepared& prepared, SubmitAdmission* admission) {
  const SubmitContext& context = prepared.context;
  JobRow r = prepared.row;
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
  if (admission)  // per-user limits may refuse (rolls back) or hold the job (auth_admission.h)
    if (auto st = admission->admit(txn, r, context); !st) return st.error();
  if (r.state == JobState::queued) txn.on_commit([this, q = queued_from(r)] { broker_.job_queued(q); });
  return r;
}

void JobCommands::submit_job_async(std::string_view spec_json, const SubmitContext& submitted,
                                   std::function<void(Expected<JobRow>)> done) {
  auto prepared = prepare(spec_json, submitted);
  if (!prepared) return done(prepared.error());
  auto change = [this, prepared = std::move(*prepared), admission = admission_.load()](WriteTxn& txn) -> Expected<JobRow> {
    const SubmitContext& context = prepared.context;
    if (!context.idempotency_key.empty()) {  // a retried submit: the first job, unchanged
      auto prior = txn.job_by_idempotency_key(context.owner, context.idempotency_key);
      if (!prior) return prior.error();
      if (*prior) {
        auto first = txn.job(**prior);
        if (!first) return first.error();
        if (*first) return std::move(**first);
      }
    }
    return insert_prepared(txn, prepared, admission);
  };
  store_.write_value_async<JobRow>(std::move(change), std::move(done));
}

void JobCommands::submit_array_async(std::string_view spec_json, const SubmitContext& submitted,
                                     std::function<void(Expected<std::vector<JobRow>>)> done) {
  auto specs = train::expand_sweep(spec_json);
  if (!specs) return done(specs.error());
  std::vector<Prepared> cases;
  cases.reserve(specs->size());
  for (size_t i = 0; i < specs->size(); ++i) {
    // A case's error names its index: the parameters that made it are in the message's field.
    SubmitContext context = submitted;
    context.idempotency_key.clear();  // one key names one job: a retried array is a new array
    auto prepared = prepare((*specs)[i], context);
    if (!prepared) {
      Error e = prepared.error();
      e.message = "sweep case " + std::to_string(i) + ": " + e.message;
      return done(e);
    }
    cases.push_back(std::move(*prepared));
  }
  // Every case in one transaction: the whole array is stored, or none of it.
  auto change = [this, cases = std::move(cases), admission = admission_.load()](WriteTxn& txn) -> Expected<std::vector<JobRow>> {
    std::vector<JobRow> rows;
    rows.reserve(cases.size());
    for (const Prepared& c : cases) {
      auto row = insert_prepared(txn, c, admission);
      if (!row) return row.error();
      row->array_id = rows.empty() ? row->id : rows.front().id;
      if (auto st = txn.set_job_array(row->id, *row->array_id); !st) return st.error();
      rows.push_back(std::move(*row));
    }
    return rows;
  };
  store_.write_value_async<std::vector<JobRow>>(std::move(change), std::move(done));
}

Expected<JobPage> JobCommands::list_jobs(const JobListRequest& request) {
  store::JobQuery q;
  q.state = request.state;
  q.after_id = request.after_id;
  q.owner = request.owner;
  q.array_id = request.array_id;
  q.limit = std::clamp(request.limit, 1, options_.max_list_limit) + 1;  // one more: is there a next page?
  auto rows = store_.list_jobs(q);
  if (!rows) return rows.error();
  JobPage page;
  page.jobs = std::move(*rows);
  for (auto& job : page.jobs) reports_.add_newest_heartbeat(job);
  if (static_cast<int>(page.jobs.size()) == q.limit) {
    page.jobs.pop_back();
    page.next_after = page.jobs.back().id;
  }
  if (!page.jobs.empty()) {
    auto costs = store_.ledger_job_totals(page.jobs.front().id, page.jobs.back().id);
    if (!costs) return costs.error();
    page.costs = std::move(*costs);
  }
  return page;
}

Expected<JobDetail> JobCommands::get_job(int64_t id) {
  auto r = store_.get_job_with_events(id);
  if (!r) return r.error();
  if (!*r) return job_not_found(id);
  auto ledger = store_.ledger_rows_of_job(id);
  if (!ledger) return ledger.error();
  reports_.add_newest_heartbeat((*r)->first);
  std::vector<store::GangMemberRow> nodes;
  if ((*r)->first.resource_nodes > 1 && (*r)->first.lease()) {
    auto members = store_.gang_members(id);
    if (!members) return members.error();
    nodes = std::move(*members);
  }
  return JobDetail{std::move((*r)->first), std::move((*r)->second), std::move(*ledger), std::move(nodes)};
}

Expected<JobRow> JobCommands::cancel_job(int64_t id, const std::optional<std::string>& dependency_failed) {
  const int64_t now = clock_.now_ms();
  return store_.write_value<JobRow>([this, id, now, dependency_failed](WriteTxn& txn) -> Expected<JobRow> {
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
      if (auto st = reports_.end_lease_in(txn, job, now); !st) return st.error();
    job.lease_expires_ms.reset();
    json detail{{"by", "user"}};
    if (dependency_failed) {
      detail = json{{"by", "dependency"}, {"reason", *dependency_failed}};
      job.error = "cancelled: " + *dependency_failed;
    }
    if (auto st = transition_job(txn, job, JobState::cancelled, "cancelled", detail, now); !st) return st.error();
    if (was_queued) txn.on_commit([this, id] { broker_.job_left_queue(id); });
    txn.on_commit([this, id] { moves_.forget(id); });
    return job;
  });
}

Expected<bool> JobCommands::unplace(int64_t job_id, const std::string& reason) {
  const int64_t now = clock_.now_ms();
  return store_.write_value<bool>([this, job_id, reason, now](WriteTxn& txn) -> Expected<bool> {
    auto found = txn.job(job_id);
    if (!found) return found.error();
    if (!*found || !(*found)->awaiting_lease()) return false;
    JobRow job = std::move(**found);
    if (auto st = transition_job(txn, job, JobState::queued, "unplaced", json{{"reason", reason}}, now); !st)
      return st.error();
    txn.on_commit([this, q = queued_from(job)] { broker_.job_queued(q); });
    return true;
  });
}

Expected<bool> JobCommands::hold_waiting(int64_t job_id, const json& detail) {
  const int64_t now = clock_.now_ms();
  return store_.write_value<bool>([this, job_id, detail, now](WriteTxn& txn) -> Expected<bool> {
    auto found = txn.job(job_id);
    if (!found) return found.error();
    if (!*found) return false;
    JobRow job = std::move(**found);
    if (job.awaiting_lease()) {  // placed, no worker yet: back to the queue first (the lifecycle's edge)
      if (auto st = transition_job(txn, job, JobState::queued, "unplaced", detail, now); !st) return st.error();
    } else if (job.state != JobState::queued) {
      return false;
    }
    if (auto st = transition_job(txn, job, JobState::held, "held", detail, now); !st) return st.error();
    txn.on_commit([this, job_id] { broker_.job_left_queue(job_id); });
    return true;
  });
}

Expected<std::vector<JobRow>> JobCommands::cancel_array(int64_t array_id, const std::optional<std::string>& owner) {
  std::vector<JobRow> out;
  store::JobQuery q;
  q.array_id = array_id;
  q.owner = owner;
  q.limit = options_.max_list_limit;
  for (;;) {
    auto rows = store_.list_jobs(q);
    if (!rows) return rows.error();
    for (const JobRow& job : *rows) {
      if (is_terminal(job.state)) {  // ended before: listed as it is
        out.push_back(job);
        continue;
      }
      auto cancelled = cancel_job(job.id);
      // A job that ended between the listing and its cancel: listed as it ended.
      if (!cancelled && cancelled.error().code != ErrorCode::conflict) return cancelled.error();
      if (cancelled) {
        out.push_back(std::move(*cancelled));
      } else {
        auto now = store_.get_job(job.id);
        if (!now) return now.error();
        if (*now) out.push_back(std::move(**now));
      }
    }
    if (static_cast<int>(rows->size()) < q.limit) break;
    q.after_id = rows->back().id;
  }
  if (out.empty())
    return make_error(ErrorCode::not_found, "job array " + std::to_string(array_id) + " does not exist", "id");
  return out;
}

Expected<JobRow> JobCommands::request_move(int64_t job_id, const MoveRequest& request) {
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

// ------------------------------------------------------------------ workers

Expected<WorkerRegistered> JobCommands::register_worker(const WorkerRegistration& request) {
  store::WorkerRow row;
  row.name = request.name;
  row.capabilities = request.capabilities;
  row.registered_ms = row.last_seen_ms = clock_.now_ms();
  row.state = store::WorkerState::active;
  row.secret_hash = request.secret_hash;
  auto id = store_.write_value<int64_t>([row](WriteTxn& txn) { return txn.insert_worker(row); });
  if (!id) return id.error();
  broker_.remember_worker(*id, request.capabilities);
  if (Feasibility* feasibility = feasibility_.load()) feasibility->add_worker(*id, request.name, request.capabilities);
  observer_.worker_available(*id);
  return WorkerRegistered{*id, options_.heartbeat_interval_s, options_.lease_timeout_s,
                          options_.max_lease_wait_s};
}

Expected<std::vector<WorkerInfo>> JobCommands::list_workers(const std::optional<std::string>& owner,
                                                            int64_t after_id, int64_t limit) {
  auto rows = store_.list_workers(after_id, limit);
  if (!rows) return rows.error();
  auto leases = store_.active_leases(owner);
  if (!leases) return leases.error();
  std::unordered_map<int64_t, std::vector<int64_t>> jobs_of;
  for (const auto& [job_id, worker_id] : *leases) jobs_of[worker_id].push_back(job_id);
  std::vector<WorkerInfo> out;
  out.reserve(rows->size());
  for (auto& row : *rows) {
    WorkerInfo info;
    info.capabilities = row.capabilities;
    info.job_ids = jobs_of[row.id];
    // Newer than the stored last_seen_ms, which heartbeats advance only every 10 s (worker_contacts.h).
    if (auto c = broker_.contacts().last(row.id)) row.last_seen_ms = std::max(row.last_seen_ms, c->wall_ms);
    info.row = std::move(row);
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace jobctl::daemon::jobs
