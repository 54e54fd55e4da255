#include "daemon/placement/placement_service.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>

#include "cost/gpu_specs.h"
#include "daemon/jobs/job_transition.h"
#include "daemon/placement/placement_matcher.h"
#include "scheduler/job.h"
#include "scheduler/job_state.h"
#include "train/spec/job_spec.h"
#include "train/spec/model_stats.h"

namespace jobctl::daemon::placement {

using nlohmann::json;
using scheduler::Candidate;
using scheduler::OptionKind;
using scheduler::Outcome;
using store::WriteTxn;

namespace {

constexpr double kHourMs = 3.6e6;

std::string option_name(OptionKind k) {
  switch (k) {
    case OptionKind::local: return "local";
    case OptionKind::on_demand: return "on_demand";
    case OptionKind::spot: return "spot";
  }
  return "local";
}

// The fraction of the job's work already done, from its last progress report.
double done_fraction(const std::optional<std::string>& progress_json) {
  if (!progress_json) return 0;
  json p = json::parse(*progress_json, nullptr, false);
  if (!p.is_object()) return 0;
  const double step = p.value("step", 0.0), total = p.value("total_steps", 0.0);
  if (total <= 0 || step <= 0) return 0;
  return std::clamp(step / total, 0.0, 1.0);
}

// The ids of a local worker's billed resources: one per GPU ("local:<id>:gpu<k>"), or its CPU.
std::vector<std::string> local_resources(int64_t worker_id, const jobs::WorkerCapabilities& caps) {
  std::vector<std::string> out;
  const std::string base = "local:" + std::to_string(worker_id) + ":";
  if (caps.gpus.empty()) out.push_back(base + "cpu");
  for (size_t k = 0; k < caps.gpus.size(); ++k) out.push_back(base + "gpu" + std::to_string(k));
  return out;
}

}  // namespace

PlacementService::PlacementService(store::Store& store, const Clock& clock, jobs::JobService& jobs,
                                   PlacementSettings settings)
    : store_(store), clock_(clock), jobs_(jobs), settings_(std::move(settings)), ledger_(store) {}

Status PlacementService::start() {
  std::vector<std::string> warnings;
  auto offers = load_offers(settings_, &warnings);
  if (!offers) return offers.error();
  auto cal = store_.calibrations();
  if (!cal) return cal.error();
  json entries = json::array();
  for (const auto& c : *cal)
    entries.push_back({{"gpu", c.gpu_model}, {"model_kind", c.model_kind}, {"log_efficiency", c.log_efficiency},
                       {"efficiency", std::exp(c.log_efficiency)}, {"samples", c.samples}});
  auto calibrator = cost::EfficiencyCalibrator::from_json(json{{"version", 1}, {"entries", entries}});
  if (!calibrator) return calibrator.error();
  {
    std::lock_guard<std::mutex> lock(mu_);
    offers_ = std::move(*offers);
    calibrator_ = std::move(*calibrator);
    context_dirty_ = true;
  }
  jobs_.set_queued_observer([this](int64_t id) { request_placement(id); });
  jobs_.set_heartbeat_observer([this](int64_t job, int64_t worker, const std::string& progress) {
    observe_heartbeat(job, worker, progress);
  });
  // Jobs queued before this start (or while placement was off) are placed on the first tick.
  auto queued = store_.queued_jobs();
  if (!queued) return queued.error();
  for (const auto& q : *queued) request_placement(q.id);
  return {};
}

std::vector<cost::Offer> PlacementService::offers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return offers_;
}

std::vector<cost::Calibration> PlacementService::calibrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calibrator_.all();
}

std::shared_ptr<const scheduler::PlacementContext> PlacementService::context() {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = clock_.now_ms();
  for (auto it = set_aside_.begin(); it != set_aside_.end();) {
    if (it->second <= now) {
      it = set_aside_.erase(it);
      context_dirty_ = true;
      ++offers_generation_;
    } else {
      ++it;
    }
  }
  if (context_dirty_ || !context_) {
    std::vector<cost::Offer> offers;
    offers.reserve(offers_.size());
    for (const auto& o : offers_) {
      if (set_aside_.count(OfferMarket{o.instance_type, o.region, false})) continue;  // the whole offer
      offers.push_back(o);
      if (set_aside_.count(OfferMarket{o.instance_type, o.region, true})) offers.back().spot_usd_per_hour.reset();
    }
    context_ = std::make_shared<const scheduler::PlacementContext>(std::move(offers), settings_.local_gpus,
                                                                   calibrator_, placement_config(settings_));
    context_dirty_ = false;
  }
  return context_;
}

uint64_t PlacementService::offers_generation() {
  (void)context();  // drops set-asides that have ended first
  std::lock_guard<std::mutex> lock(mu_);
  return offers_generation_;
}

void PlacementService::set_aside(const std::string& instance_type, const std::string& region, bool spot,
                                 int64_t until_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& until = set_aside_[OfferMarket{instance_type, region, spot}];
  until = std::max(until, until_ms);
  context_dirty_ = true;
  ++offers_generation_;
}

const PlacementService::LeaseChoice& PlacementService::lease_choice_locked(const store::LeaseSummary& lease) {
  auto [it, added] = lease_choices_.try_emplace(lease.job_id);
  if (!added && it->second.epoch == lease.epoch) return it->second;
  LeaseChoice choice;
  choice.epoch = lease.epoch;
  if (lease.chosen_json) {
    const json c = json::parse(*lease.chosen_json, nullptr, false);
    if (c.is_object()) {
      choice.estimated_hours = c.value("estimated_hours", 1.0);
      choice.spot = c.value("option", "") == "spot";
    }
  }
  it->second = choice;
  return it->second;
}

Expected<scheduler::LocalCapacity> PlacementService::local_capacity(std::vector<int64_t>* worker_ids) {
  auto workers = store_.list_workers();
  if (!workers) return workers.error();
  auto leases = store_.lease_summaries();
  if (!leases) return leases.error();
  const int64_t now = clock_.now_ms();
  std::lock_guard<std::mutex> lock(mu_);  // the caches below
  std::map<int64_t, int64_t> busy_until;  // worker -> expected end of the job it holds
  std::set<int64_t> leased;
  for (const auto& l : *leases) {
    leased.insert(l.job_id);
    const double hours = lease_choice_locked(l).estimated_hours;
    auto& until = busy_until[l.worker_id];
    until = std::max(until, now + static_cast<int64_t>(hours * (1.0 - done_fraction(l.progress_json)) * kHourMs));
  }
  std::erase_if(lease_choices_, [&leased](const auto& entry) { return !leased.count(entry.first); });
  // A worker's capabilities never change after it registers: parsed once per worker.
  scheduler::LocalCapacity capacity;
  for (const auto& w : *workers) {
    if (w.state != "active") continue;
    auto cached = worker_pools_.find(w.id);
    if (cached == worker_pools_.end()) {
      std::optional<scheduler::Worker> parsed;
      auto caps = jobs::capabilities_from_json(json::parse(w.capabilities_json, nullptr, false), "capabilities");
      if (caps && !caps->instance) {  // readable, and not a cloud instance's worker
        scheduler::Worker sw;
        sw.id = std::to_string(w.id);
        sw.gpu_model = worker_gpu_model(*caps);
        sw.gpu_count = caps->gpus.empty() ? 1 : static_cast<int>(caps->gpus.size());
        const int64_t mem_mb = caps->gpus.empty() ? caps->memory_mb : caps->gpus.front().memory_mb;
        sw.gpu_memory_gb = mem_mb > 0 ? static_cast<double>(mem_mb) / 1024.0 : 1e6;  // 0: not reported
        parsed = std::move(sw);
      }
      cached = worker_pools_.emplace(w.id, std::move(parsed)).first;
    }
    if (!cached->second) continue;
    scheduler::Worker sw = *cached->second;
    if (auto it = busy_until.find(w.id); it != busy_until.end()) {
      sw.busy = true;
      sw.busy_until_ms = it->second;
    }
    capacity.add_worker(std::move(sw));
    if (worker_ids) worker_ids->push_back(w.id);
  }
  return capacity;
}

Expected<PlacementService::Decision> PlacementService::decide(const store::JobRow& row, const train::JobSpec& spec,
                                                               int64_t now_ms, const scheduler::LocalCapacity& local) {
  auto ctx = context();
  const scheduler::LocalCapacity* capacity = &local;
  const train::ModelStats stats = train::model_stats(spec);
  scheduler::Job job = scheduler::job_from_spec(std::to_string(row.id), spec, stats, row.created_ms);
  const double done = done_fraction(row.progress_json);
  const double remaining = std::max(1.0 - done, 0.001);
  const double full_flops = job.workload.training_flops;
  job.workload.training_flops = full_flops * remaining;

  std::vector<Candidate> table;
  // "any" in a spec means any worker, CPU-only ones included (docs/api.md): GPUs are tried first
  // and a CPU is chosen only when no GPU option fits.
  auto run = [&](scheduler::Job& j) {
    auto d = scheduler::place(j, *ctx, *capacity, now_ms, &table);
    if (d.outcome == Outcome::unplaceable && spec.resources.gpu == "any" && j.gpu == "any") {
      j.gpu = "cpu";
      d = scheduler::place(j, *ctx, *capacity, now_ms, &table);
    }
    return d;
  };
  auto d = run(job);

  // Spot deadline policy, re-evaluated at every interruption (a requeued job with a deadline).
  json policy_note = nullptr;
  if (job.deadline_hours && row.recoveries > 0 && d.outcome == Outcome::launch_spot) {
    double total_hours = 0;  // the whole job's compute on the fastest fitting on-demand option
    for (const auto& c : table)
      if (c.kind == OptionKind::on_demand && (c.rejection == scheduler::Rejection::none ||
                                              c.rejection == scheduler::Rejection::price_cap))
        total_hours = total_hours == 0 ? c.estimated_hours : std::min(total_hours, c.estimated_hours);
    if (total_hours <= 0) total_hours = d.choice.estimated_hours;
    total_hours /= remaining;
    const scheduler::ProgressState s = deadline_progress(row.created_ms, now_ms, *job.deadline_hours,
                                                         total_hours, done, scheduler::Capacity::none);
    scheduler::Capacity next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& policy = policies_[row.id];
      if (!policy) policy = scheduler::make_deadline_policy(settings_.deadline_policy);
      next = policy->decide(s);
    }
    policy_note = {{"policy", settings_.deadline_policy}, {"decision", scheduler::to_string(next)},
                   {"elapsed_hours", s.elapsed_hours}, {"remaining_compute_hours", s.remaining_compute()},
                   {"remaining_hours", s.remaining_time()}};
    if (next == scheduler::Capacity::on_demand) {
      job.spot = train::SpotMode::never;
      d = run(job);
    }
  }

  json candidates = json::array();
  auto row_json = [&](const Candidate& c) {
    json r;
    r["option"] = option_name(c.kind);
    r["label"] = scheduler::option_label(c, *ctx, *capacity);
    if (c.kind == OptionKind::local) {
      const auto& pool = capacity->pools()[c.source];
      r["provider"] = "local";
      r["cloud"] = nullptr;
      r["region"] = nullptr;
      r["instance_type"] = nullptr;
      r["gpu"] = pool.gpu_model;
      r["gpus"] = pool.gpu_count;
    } else {
      const auto& o = ctx->offers()[c.source];
      r["provider"] = settings_.cloud_provider.empty() ? json(nullptr) : json(settings_.cloud_provider);
      r["cloud"] = o.cloud;
      r["region"] = o.region;
      r["zone"] = o.zone;
      r["instance_type"] = o.instance_type;
      r["gpu"] = cost::canonical_gpu_name(o.gpu_model, o.gpu_memory_gb);
      r["gpus"] = o.gpu_count;
    }
    r["usd_per_hour"] = c.usd_per_hour;
    r["queue_wait_hours"] = c.queue_wait_hours;
    r["estimated_hours"] = c.estimated_hours;
    r["estimated_cost_usd"] = c.estimated_cost_usd;
    r["completion_hours"] = c.completion_hours;
    r["meets_deadline"] = c.meets_deadline;
    r["chosen"] = c.chosen;
    if (c.rejection != scheduler::Rejection::none) {
      r["rejection"] = scheduler::to_string(c.rejection);
      r["rejected"] = scheduler::rejection_text(c, job, *ctx, *capacity);
    }
    return r;
  };
  for (const auto& c : table) candidates.push_back(row_json(c));
  Decision out;
  out.placed = d.outcome != Outcome::unplaceable;
  json chosen = nullptr;
  if (out.placed) {
    chosen = row_json(d.choice);
    chosen.erase("chosen");
  }
  std::string reason = scheduler::decision_reason(d, job, *ctx, *capacity);
  if (!policy_note.is_null() && policy_note["decision"] == "on_demand")
    reason += "; the " + settings_.deadline_policy + " deadline policy moved it to on-demand";
  out.placement = {{"chosen", chosen},
                   {"candidates", std::move(candidates)},
                   {"reason", reason},
                   {"decided_ms", now_ms},
                   {"outcome", scheduler::to_string(d.outcome)},
                   {"reason_code", scheduler::to_string(d.reason_code)},
                   {"deadline_left_hours", d.deadline_left_hours ? json(*d.deadline_left_hours) : json(nullptr)},
                   {"remaining_fraction", remaining},
                   {"deadline_policy", policy_note}};
  return out;
}

Expected<json> PlacementService::quote(std::string_view spec_json) {
  auto spec = train::parse_job_spec(spec_json);
  if (!spec) return spec.error();
  store::JobRow row;
  row.created_ms = clock_.now_ms();
  auto capacity = local_capacity(nullptr);
  if (!capacity) return capacity.error();
  auto d = decide(row, *spec, row.created_ms, *capacity);
  if (!d) return d.error();
  return std::move(d->placement);
}

void PlacementService::request_placement(int64_t job_id) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    first = pending_.empty();
    pending_.insert(job_id);
  }
  if (first && pending_observer_) pending_observer_();
}

Expected<std::optional<json>> PlacementService::place_job(int64_t job_id) {
  if (auto st = place_row(job_id); !st) return st.error();
  auto row = store_.get_job(job_id);
  if (!row) return row.error();
  if (!*row || !(*row)->placement_json) return std::optional<json>{};
  return std::optional<json>(json::parse(*(*row)->placement_json, nullptr, false));
}

Status PlacementService::place_row(int64_t job_id) { return place_rows({job_id}, false); }

Status PlacementService::place_rows(const std::vector<int64_t>& ids, bool skip_unchanged) {
  std::lock_guard<std::mutex> pass(place_mu_);
  if (ids.empty()) return {};
  // One read of the workers and their leases for the whole pass, not one per job.
  auto capacity = local_capacity(nullptr);
  if (!capacity) return capacity.error();
  // What an unplaceable job's fate depends on: the local pools that exist and the offers (with
  // their set-asides); calibration changes estimates, never whether anything can run a job.
  // While these are unchanged, re-deciding such a job gives the same answer, so the periodic pass
  // skips it (a queue of thousands of jobs nothing can run would otherwise cost a decision and a
  // write each, every pass).
  std::string inputs = std::to_string(offers_generation()) + ";";
  for (const auto& pool : capacity->pools())
    inputs += pool.gpu_model + "x" + std::to_string(pool.gpu_count) + ":" + std::to_string(pool.gpu_memory_gb) + ";";
  // Decisions are queued as store changes a group at a time, so the writer commits each group
  // in one transaction (one fsync for many) without filling its queue ahead of other writers
  // (a submit waits behind at most one group).
  constexpr size_t kGroup = 64;
  struct Pending {
    std::mutex mu;
    std::condition_variable cv;
    size_t left = 0;
    Status first_error;
  };
  auto pending = std::make_shared<Pending>();
  Status result;
  for (int64_t job_id : ids) {
    auto found = store_.get_job(job_id);
    if (!found) {
      if (result) result = found.error();
      continue;
    }
    if (!*found || (*found)->state != store::JobState::queued) continue;
    if (skip_unchanged) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = unplaceable_inputs_.find(job_id);
      if (it != unplaceable_inputs_.end() && it->second == inputs) continue;
    }
    const store::JobRow row = **found;
    auto spec = train::parse_job_spec(row.spec_json);
    if (!spec) {
      if (result) result = spec.error();
      continue;
    }
    const int64_t now = clock_.now_ms();
    const auto started = std::chrono::steady_clock::now();  // a duration for the metric, not a time
    auto d = decide(row, *spec, now, *capacity);
    if (decision_observer_)
      decision_observer_(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    if (!d) {
      if (result) result = d.error();
      continue;
    }
    const bool placed = d->placed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (placed) unplaceable_inputs_.erase(job_id);
      else unplaceable_inputs_[job_id] = inputs;
    }
    if (!placed) has_unplaced_ = true;
    std::string text = d->placement.dump();
    std::optional<std::string> chosen;
    json detail = {{"reason", d->placement["reason"]}};
    if (placed) {
      const json& c = d->placement["chosen"];
      chosen = c.dump();
      detail["option"] = c["option"];
      detail["gpu"] = c["gpu"];
      detail["usd_per_hour"] = c["usd_per_hour"];
      detail["estimated_cost_usd"] = c["estimated_cost_usd"];
      if (!c["instance_type"].is_null()) detail["instance_type"] = c["instance_type"];
    }
    auto change = [this, job_id, placed, text = std::move(text), chosen = std::move(chosen), detail, now,
                   expected_updated = row.updated_ms](WriteTxn& txn) -> Status {
      auto cur = txn.job(job_id);
      if (!cur) return cur.error();
      // Changed meanwhile (cancelled, leased by a FIFO matcher): this decision is stale.
      if (!*cur || (*cur)->state != store::JobState::queued || (*cur)->updated_ms != expected_updated) return {};
      store::JobRow job = std::move(**cur);
      std::string previous_reason;
      if (job.placement_json) {
        json p = json::parse(*job.placement_json, nullptr, false);
        if (p.is_object()) previous_reason = p.value("reason", "");
      }
      job.chosen_json = chosen;
      if (auto st = txn.put_placement(job.id, text); !st) return st;
      if (placed) {
        job.worker_id.reset();
        if (auto st = jobs::transition_job(txn, job, store::JobState::placed, "placed", detail, now); !st) return st;
        jobs::QueuedJob q{job.id, job.priority, job.created_ms, job.resource_gpu, job.resource_gpus, {}, {}, {}};
        jobs::set_placement_fields(job, q);
        txn.on_commit([this, q] {
          jobs_.job_placed(q);
          if (cloud_placed_observer_ && (q.placement_option == "spot" || q.placement_option == "on_demand"))
            cloud_placed_observer_(q.id);
        });
        return {};
      }
      if (auto st = txn.update_job(job); !st) return st;  // state unchanged; the table refreshed
      if (previous_reason != detail["reason"].get<std::string>())
        return jobs::note_job_event(txn, job.id, "unplaceable", detail, now);
      return {};
    };
    {
      std::lock_guard<std::mutex> lock(pending->mu);
      ++pending->left;
    }
    store_.write_async(std::move(change), [pending](Status st) {
      std::lock_guard<std::mutex> lock(pending->mu);
      if (!st && pending->first_error) pending->first_error = std::move(st);
      if (--pending->left == 0) pending->cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(pending->mu);
    if (pending->left >= kGroup) pending->cv.wait(lock, [&] { return pending->left == 0; });
  }
  std::unique_lock<std::mutex> lock(pending->mu);
  pending->cv.wait(lock, [&] { return pending->left == 0; });
  if (!pending->first_error && result) result = pending->first_error;
  return result;
}

void PlacementService::tick() {
  std::set<int64_t> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending.swap(pending_);
  }
  (void)place_rows(std::vector<int64_t>(pending.begin(), pending.end()), false);
  const int64_t now = clock_.now_ms();
  bool due = now - last_reevaluation_ms_ >= int64_t{settings_.reevaluate_s} * 1000;
  if (!due && has_unplaced_) {  // a new worker may make an unplaceable job placeable
    auto workers = store_.count_workers();
    if (workers && static_cast<size_t>(*workers) != last_worker_count_) due = true;
  }
  if (due) (void)reevaluate(now - last_accrual_ms_ >= int64_t{settings_.ledger_accrual_s} * 1000);
}

Status PlacementService::reevaluate(bool accrue) {
  last_reevaluation_ms_ = clock_.now_ms();
  auto workers = store_.count_workers();
  if (workers) last_worker_count_ = static_cast<size_t>(*workers);
  has_unplaced_ = false;
  Status result;
  auto queued = store_.queued_jobs();
  if (!queued) return queued.error();
  std::vector<int64_t> ids;
  ids.reserve(queued->size());
  for (const auto& q : *queued) ids.push_back(q.id);
  {  // forget jobs that left the queue
    std::lock_guard<std::mutex> lock(mu_);
    const std::set<int64_t> still(ids.begin(), ids.end());
    std::erase_if(unplaceable_inputs_, [&still](const auto& entry) { return !still.count(entry.first); });
  }
  if (auto st = place_rows(ids, true); !st && result) result = st;
  if (accrue) {
    last_accrual_ms_ = clock_.now_ms();
    if (auto st = accrue_local_leases(); !st && result) result = st;
  }
  if (auto st = check_running_deadlines(); !st && result) result = st;
  return result;
}

// ------------------------------------------------------------------ deadline policy at runtime

scheduler::ProgressState PlacementService::deadline_progress(int64_t created_ms, int64_t now_ms,
                                                             double deadline_hours, double total_hours,
                                                             double done, scheduler::Capacity current) const {
  scheduler::ProgressState s;
  s.elapsed_hours = static_cast<double>(now_ms - created_ms) / kHourMs;
  s.deadline_hours = deadline_hours;
  s.total_compute_hours = total_hours;
  s.done_compute_hours = total_hours * done;
  s.changeover_hours = settings_.provision_hours;
  s.decision_period_hours = settings_.reevaluate_s / 3600.0;
  s.current = current;
  s.spot_available = true;
  // A requeued job (current == none) holds no local slot: the policy weighs spot vs on-demand.
  s.local_available = false;
  return s;
}

Status PlacementService::check_running_deadlines() {
  auto leases = store_.lease_summaries();
  if (!leases) return leases.error();
  const int64_t now = clock_.now_ms();
  for (const auto& listed : *leases) {
    // Only running jobs on spot (the small chosen row says which); the rest need no read.
    if (!listed.chosen_json || !listed.progress_json) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!lease_choice_locked(listed).spot) continue;
    }
    auto row = store_.get_job(listed.job_id);
    if (!row || !*row || (*row)->state != store::JobState::running || !(*row)->placement_json) continue;
    json p = json::parse(*(*row)->placement_json, nullptr, false);
    if (!p.is_object() || !p["chosen"].is_object() || p["chosen"].value("option", "") != "spot") continue;
    auto spec = train::parse_job_spec((*row)->spec_json);
    if (!spec || !spec->placement.deadline_hours) continue;
    const double done = done_fraction((*row)->progress_json);
    const double remaining_at_placement = p.value("remaining_fraction", 1.0);
    const double total = p["chosen"].value("estimated_hours", 0.0) / std::max(remaining_at_placement, 0.001);
    const scheduler::ProgressState s =
        deadline_progress((*row)->created_ms, now, *spec->placement.deadline_hours, total, done,
                          scheduler::Capacity::spot);
    scheduler::Capacity next;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (deadline_flagged_.count(listed.job_id)) continue;
      auto& policy = policies_[listed.job_id];
      if (!policy) policy = scheduler::make_deadline_policy(settings_.deadline_policy);
      next = policy->decide(s);
      if (next != scheduler::Capacity::on_demand) continue;
      deadline_flagged_.insert(listed.job_id);
    }
    json detail = {{"policy", settings_.deadline_policy},
                   {"decision", "on_demand"},
                   {"remaining_compute_hours", s.remaining_compute()},
                   {"remaining_hours", s.remaining_time()},
                   {"action", "the job moves to on-demand at its next interruption"}};
    const int64_t id = listed.job_id;
    (void)store_.write([id, detail, now](WriteTxn& txn) -> Status {
      store::JobEventRow ev{id, 0, now, "deadline_policy", std::nullopt, std::nullopt, detail.dump()};
      auto seq = txn.append_event(ev);
      return seq ? Status{} : Status{seq.error()};
    });
  }
  return {};
}

// ------------------------------------------------------------------ calibration

void PlacementService::observe_heartbeat(int64_t job_id, int64_t worker_id, const std::string& progress_json) {
  json p = json::parse(progress_json, nullptr, false);
  if (!p.is_object()) return;
  const double step_ms = p.value("step_ms", 0.0), total_steps = p.value("total_steps", 0.0);
  if (!(step_ms > 0) || !(total_steps > 0)) return;
  // What a step of this job on this worker is (read and computed once per lease: this runs on
  // every heartbeat, on the store's writer thread).
  std::optional<HeartbeatShape> shape;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = heartbeat_shapes_.find(job_id);
    if (it != heartbeat_shapes_.end() && it->second.worker_id == worker_id && it->second.total_steps == total_steps)
      shape = it->second;
  }
  if (!shape) {
    auto job = store_.get_job(job_id);
    auto worker = store_.get_worker(worker_id);
    if (!job || !*job || !worker || !*worker) return;
    auto spec = train::parse_job_spec((*job)->spec_json);
    auto caps = jobs::capabilities_from_json(json::parse((*worker)->capabilities_json, nullptr, false), "capabilities");
    if (!spec || !caps) return;
    const train::ModelStats stats = train::model_stats(*spec);
    const cost::Workload w = cost::workload_from_spec(*spec, stats);
    HeartbeatShape h;
    h.worker_id = worker_id;
    h.total_steps = total_steps;
    h.step_flops = w.training_flops / total_steps;
    h.gpu = worker_gpu_model(*caps);
    h.model_kind = w.model_kind;
    h.precision = w.precision;
    h.gpus = caps->gpus.empty() ? 1 : std::min<int>(std::max(spec->resources.gpus, 1), static_cast<int>(caps->gpus.size()));
    shape = h;
    std::lock_guard<std::mutex> lock(mu_);
    if (heartbeat_shapes_.size() > 100000) heartbeat_shapes_.clear();  // bounded: a cache, not state
    heartbeat_shapes_[job_id] = h;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!calibrator_.observe(shape->gpu, shape->model_kind, shape->step_flops, step_ms / 1000.0, shape->gpus,
                             shape->precision))
      return;
    context_dirty_ = true;
  }
  persist_calibration(shape->gpu, shape->model_kind);
}

void PlacementService::persist_calibration(const std::string& gpu, const std::string& kind) {
  std::optional<cost::Calibration> c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c = calibrator_.calibration(gpu, kind);
  }
  if (!c) return;
  store::CalibrationRecord rec{c->gpu_model, c->model_kind, std::log(c->efficiency), c->samples, clock_.now_ms()};
  store_.write_async([rec](WriteTxn& txn) { return txn.put_calibration(rec); }, nullptr);
}

// ------------------------------------------------------------------ ledger: owned GPU time

Status PlacementService::accrue_local_leases() {
  auto leases = store_.lease_summaries();
  if (!leases) return leases.error();
  const int64_t now = clock_.now_ms();
  auto ctx = context();
  std::vector<ledger::LedgerEntry> entries;
  std::set<int64_t> active;
  for (const auto& l : *leases) {
    active.insert(l.job_id);
    OpenLease lease;
    bool known = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = open_leases_.find(l.job_id);
      if (it != open_leases_.end() && it->second.epoch == l.epoch) {
        lease = it->second;
        known = true;
      }
    }
    if (!known) {  // a lease not seen yet: where, since when, at what price (read once per lease)
      auto detail = store_.get_job_with_events(l.job_id);
      if (!detail || !*detail) continue;
      const auto& [job, events] = **detail;
      auto worker = store_.get_worker(l.worker_id);
      if (!worker || !*worker) continue;
      lease.worker_id = l.worker_id;
      lease.epoch = l.epoch;
      auto caps = jobs::capabilities_from_json(json::parse((*worker)->capabilities_json, nullptr, false), "capabilities");
      // A cloud instance's time is accrued by the provisioner: no local resources to bill here.
      if (caps && !caps->instance) {
        lease.start_ms = job.updated_ms;
        for (auto ev = events.rbegin(); ev != events.rend(); ++ev)
          if (ev->type == "leased") { lease.start_ms = ev->time_ms; break; }
        lease.resources = local_resources(l.worker_id, *caps);
        lease.usd_per_hour_each = std::max(ctx->local_usd_per_gpu_hour(worker_gpu_model(*caps)), 0.0);
        lease.user = ledger::ledger_user(store_, l.job_id);
        if (job.placement_json)
          lease.on_demand_usd_per_hour = ledger::ledger_on_demand_reference(*job.placement_json).value_or(0.0);
      }
      std::lock_guard<std::mutex> lock(mu_);
      open_leases_[l.job_id] = lease;
    }
    for (const auto& r : lease.resources)
      entries.push_back(ledger::LedgerEntry{l.job_id, r, "local", lease.start_ms, std::max(now, lease.start_ms),
                                    lease.usd_per_hour_each, lease.user, lease.on_demand_usd_per_hour});
  }
  // Leases that ended since the last pass: close them at the time they ended.
  std::vector<std::pair<int64_t, OpenLease>> ended;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = open_leases_.begin(); it != open_leases_.end();) {
      if (active.count(it->first) == 0) {
        ended.emplace_back(it->first, it->second);
        it = open_leases_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& [job_id, lease] : ended) {
    if (lease.resources.empty()) continue;
    auto detail = store_.get_job_with_events(job_id);
    if (!detail || !*detail) continue;
    int64_t end = now;
    for (const auto& ev : (*detail)->second) {
      if (ev.time_ms < lease.start_ms || !ev.to_state) continue;
      const auto to = *ev.to_state;
      if (to == store::JobState::succeeded || to == store::JobState::failed || to == store::JobState::cancelled ||
          to == store::JobState::preempted) {
        end = ev.time_ms;
        break;
      }
    }
    for (const auto& r : lease.resources)
      entries.push_back(ledger::LedgerEntry{job_id, r, "local", lease.start_ms, std::max(end, lease.start_ms),
                                    lease.usd_per_hour_each, lease.user, lease.on_demand_usd_per_hour});
  }
  if (entries.empty()) return {};
  // One store change (one commit) for the whole pass, however many leases there are.
  return store_.write([&entries](WriteTxn& txn) -> Status {
    for (const auto& e : entries)
      if (auto st = ledger::Ledger::accrue_in(txn, e); !st) return st;
    return {};
  });
}

// ------------------------------------------------------------------ estimate vs actual

json runtime_json(const store::JobRow& job, const std::vector<store::JobEventRow>& events) {
  if (!job.chosen_json) return nullptr;
  const json chosen = json::parse(*job.chosen_json, nullptr, false);
  if (!chosen.is_object()) return nullptr;
  const double estimated = chosen.value("estimated_hours", 0.0);
  json out = {{"estimated_hours", estimated}, {"actual_hours", nullptr}, {"error_fraction", nullptr}};
  if (job.state != store::JobState::succeeded) return out;
  double actual = -1;
  if (job.result_json) {
    json r = json::parse(*job.result_json, nullptr, false);
    if (r.is_object() && r.contains("elapsed_s") && r["elapsed_s"].is_number())
      actual = r["elapsed_s"].get<double>() / 3600.0;
  }
  if (actual < 0) {
    int64_t start = -1, end = -1;
    for (const auto& ev : events) {
      if (ev.type == "started") start = ev.time_ms;
      if (ev.type == "succeeded") end = ev.time_ms;
    }
    if (start >= 0 && end >= start) actual = static_cast<double>(end - start) / kHourMs;
  }
  if (actual < 0) return out;
  out["actual_hours"] = actual;
  if (actual > 0) out["error_fraction"] = (estimated - actual) / actual;  // > 0: overestimated
  return out;
}

}  // namespace jobctl::daemon::placement
