#include "daemon/placement/placement_passes.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <utility>

#include "cost/workload.h"
#include "daemon/jobs/job_dependencies.h"
#include "daemon/jobs/job_service_support.h"
#include "daemon/jobs/job_transition.h"
#include "daemon/placement/job_progress.h"
#include "daemon/placement/placement_matcher.h"
#include "base/readable.h"
#include "scheduler/job.h"
#include "scheduler/placement_json.h"
#include "train/spec/model_stats.h"

namespace jobctl::daemon::placement {

using nlohmann::json;
using scheduler::Candidate;
using scheduler::OptionKind;
using scheduler::Outcome;
using store::WriteTxn;

namespace {

// The first error of a pass, naming the job it came from.
void keep_first(Status& result, int64_t job_id, const Error& e) {
  if (result) result = make_error(e.code, "job " + std::to_string(job_id) + ": " + e.message, e.field);
}

}  // namespace

namespace {

void hold_to(scheduler::Job& job, jobs::MoveTarget held_to) {
  switch (held_to) {
    case jobs::MoveTarget::local: job.mode = train::PlacementMode::local; break;
    case jobs::MoveTarget::on_demand:
      job.mode = train::PlacementMode::cloud;
      job.spot = train::SpotMode::never;
      break;
    case jobs::MoveTarget::spot:
      job.mode = train::PlacementMode::cloud;
      job.spot = train::SpotMode::always;
      break;
    case jobs::MoveTarget::anywhere: break;
  }
}

}  // namespace

scheduler::Job remaining_work(const store::JobRow& row, const train::JobSpec& spec, double done,
                              jobs::MoveTarget held_to) {
  scheduler::Job job = scheduler::job_from_spec(std::to_string(row.id), spec, train::model_stats(spec), row.created_ms);
  const double left = std::max(1.0 - done, 0.001);
  job.workload.training_flops *= left;
  if (job.workload.assumed_hours) *job.workload.assumed_hours *= left;
  hold_to(job, held_to);
  return job;
}

bool spot_launchable_now(scheduler::Job job, const scheduler::PlacementContext& ctx, int64_t now_ms) {
  hold_to(job, jobs::MoveTarget::spot);
  return scheduler::place(job, ctx, scheduler::LocalCapacity{}, now_ms, nullptr).outcome == Outcome::launch_spot;
}

PlacementPasses::PlacementPasses(store::Store& store, const Clock& clock, jobs::JobService& jobs,
                                 const PlacementSettings& settings, OfferBook& offers,
                                 HeartbeatCalibration& calibration, SpotDeadlines& deadlines)
    : store_(store),
      clock_(clock),
      jobs_(jobs),
      settings_(settings),
      offers_(offers),
      calibration_(calibration),
      deadlines_(deadlines) {}

bool PlacementPasses::request(int64_t job_id) {
  MutexLock lock(requests_mu_);
  const bool first = requested_.empty() && !capacity_changed_;
  requested_.insert(job_id);
  return first;
}

bool PlacementPasses::capacity_changed() {
  MutexLock lock(requests_mu_);
  const bool first = requested_.empty() && !capacity_changed_;
  capacity_changed_ = true;
  return first;
}

Status PlacementPasses::load_queue() {
  auto queued = store_.queued_unplaceable_keys();
  if (!queued) return queued.error();
  {
    MutexLock pass(pass_mu_);
    fleet_grace_until_ms_ = clock_.now_ms() + int64_t{settings_.reevaluate_s} * 1000;
    for (const auto& [id, key] : *queued)
      if (key) index_unplaceable(id, *key, 0);  // to be tried once under this start's inputs
  }
  for (const auto& [id, key] : *queued)
    if (!key) request(id);
  return {};
}

void PlacementPasses::index_unplaceable(int64_t job_id, const std::string& key, uint64_t tried_under) {
  auto known = unplaceable_keys_.find(job_id);
  if (known != unplaceable_keys_.end() && known->second->first != key) forget_unplaceable(job_id);
  const auto group = unplaceable_groups_.try_emplace(key).first;
  unplaceable_keys_.insert_or_assign(job_id, group);
  group->second.jobs.insert(job_id);
  group->second.tried_under = std::max(group->second.tried_under, tried_under);
}

void PlacementPasses::forget_unplaceable(int64_t job_id) {
  auto at = unplaceable_keys_.find(job_id);
  if (at == unplaceable_keys_.end()) return;
  const auto group = at->second;
  group->second.jobs.erase(job_id);
  if (group->second.jobs.empty()) unplaceable_groups_.erase(group);
  unplaceable_keys_.erase(at);
}

Status PlacementPasses::run_requested() {
  std::set<int64_t> requested;
  bool capacity = false;
  {
    MutexLock lock(requests_mu_);
    requested.swap(requested_);
    std::swap(capacity, capacity_changed_);
  }
  if (requested.empty() && !capacity) return {};
  MutexLock pass(pass_mu_);
  // New jobs are always decided; the unplaceable ones only where the local pools changed.
  Status result = place(std::vector<int64_t>(requested.begin(), requested.end()), false);
  if (capacity) {  // the indexed jobs, one per key (see place())
    std::vector<int64_t> again;
    again.reserve(unplaceable_keys_.size());
    for (const auto& [id, group] : unplaceable_keys_)
      if (!requested.count(id)) again.push_back(id);
    if (auto st = place(again, true); !st && result) result = st;
  }
  return result;
}

Status PlacementPasses::reevaluate_queue() {
  auto ids = store_.queued_job_ids();  // in id order
  if (!ids) return ids.error();
  MutexLock pass(pass_mu_);
  // Forget jobs that left the queue.
  std::vector<int64_t> gone;
  for (const auto& [id, group] : unplaceable_keys_)
    if (!std::binary_search(ids->begin(), ids->end(), id)) gone.push_back(id);
  for (int64_t id : gone) {
    forget_unplaceable(id);
    event_held_.erase(id);
  }
  return place(*ids, true);
}

std::shared_ptr<const scheduler::PlacementContext> PlacementPasses::context(uint64_t* offers_generation) {
  const OfferBook::Usable usable = offers_.usable(clock_.steady_ms());
  const HeartbeatCalibration::Snapshot calibration = calibration_.snapshot();
  if (offers_generation) *offers_generation = usable.generation;
  MutexLock lock(cache_mu_);
  const bool config_changed = context_calibration_generation_ != calibration.generation || cpu_peaks_changed_;
  if (!context_ || context_offers_generation_ != usable.generation || config_changed) {
    scheduler::PlacementConfig config = placement_config(settings_);
    config.cpu_peak_tflops = cpu_peaks_;
    config.unknown_gpu_memory_gb = unknown_gpus_;
    // With offers set aside, the same context over every offer: what a job would pay without the
    // set-asides, which bounds its price while they last (scheduler/price_jump.h). It changes with
    // the catalog and the configuration only, not as offers are set aside and come back.
    if (usable.any_set_aside &&
        (!every_offer_context_ || config_changed || every_offer_catalog_generation_ != usable.catalog_generation)) {
      every_offer_context_ = std::make_shared<const scheduler::PlacementContext>(
          offers_.all(), settings_.local_gpus, *calibration.calibrator, config);
      every_offer_catalog_generation_ = usable.catalog_generation;
    } else if (config_changed) {
      every_offer_context_.reset();
    }
    context_ = std::make_shared<const scheduler::PlacementContext>(*usable.offers, settings_.local_gpus,
                                                                   *calibration.calibrator, std::move(config));
    cpu_peaks_changed_ = false;
    context_offers_generation_ = usable.generation;
    context_calibration_generation_ = calibration.generation;
  }
  any_set_aside_ = usable.any_set_aside;
  return context_;
}

std::shared_ptr<const scheduler::PlacementContext> PlacementPasses::every_offer_context() {
  MutexLock lock(cache_mu_);
  return any_set_aside_ ? every_offer_context_ : nullptr;
}

std::string PlacementPasses::bound_price_jump(scheduler::Job& job, scheduler::PlacementDecision& d,
                                              std::vector<Candidate>& table, int64_t now_ms,
                                              const scheduler::PlacementContext& ctx,
                                              const scheduler::LocalCapacity& capacity) {
  if (settings_.max_price_jump <= 0 || (d.outcome != Outcome::launch_spot && d.outcome != Outcome::launch_on_demand))
    return {};
  const auto every = every_offer_context();
  if (!every) return {};
  const scheduler::PlacementDecision usual = scheduler::place(job, *every, capacity, now_ms, nullptr);
  if (usual.outcome != Outcome::launch_spot && usual.outcome != Outcome::launch_on_demand) return {};
  const cost::Offer& offer = every->offers()[usual.choice.source];
  const bool spot = usual.choice.kind == OptionKind::spot;
  const auto until = offers_.set_aside_until(offer.instance_type, offer.region, spot);
  if (!until) return {};
  const double cooling_hours = static_cast<double>(std::max<int64_t>(*until - clock_.steady_ms(), 0)) / 3.6e6;
  const auto ceiling = scheduler::price_jump_ceiling(job, d, usual, offer.on_demand_usd_per_hour, cooling_hours,
                                                     settings_.max_price_jump);
  if (!ceiling) return {};
  const double jumped_to = d.choice.usd_per_hour;
  const double ratio = settings_.max_price_jump;
  job.max_usd_per_hour = *ceiling;
  d = scheduler::place(job, ctx, capacity, now_ms, &table);
  return "; it waits for " + offer.instance_type + " in " + offer.region + (spot ? " (spot)" : " (on demand)") + " at " +
         readable::usd_per_hour(usual.choice.usd_per_hour) + ", set aside after a failed launch for another " +
         readable::duration_hours(cooling_hours) + ", rather than pay " + readable::usd_per_hour(jumped_to) +
         ", more than " + fixed_decimal(ratio, ratio == std::floor(ratio) ? 0 : 1) + "x its price and more than its "
         "on-demand " + readable::usd_per_hour(offer.on_demand_usd_per_hour) + " (placement.max_price_jump)";
}

Expected<scheduler::LocalCapacity> PlacementPasses::local_capacity() {
  auto workers = store_.list_workers();
  if (!workers) return workers.error();
  auto leases = store_.lease_summaries();
  if (!leases) return leases.error();
  for (auto& l : *leases) jobs_.add_newest_heartbeat(l);
  PartitionSource source;
  {
    MutexLock source_lock(source_mu_);
    source = partition_source_;
  }
  // Read before cache_mu_ is taken: the source takes its own lock.
  std::vector<scheduler::LocalCapacity::Partition> partitions;
  if (source) partitions = source();
  const int64_t now = clock_.now_ms();
  MutexLock lock(cache_mu_);
  // Per worker, when each GPU its running jobs hold is expected to free.
  auto held = held_gpu_ends(*leases, now);
  if (!held) return held.error();
  scheduler::LocalCapacity capacity;
  for (const auto& w : *workers) {
    if (w.state != store::WorkerState::active) continue;
    auto cached = worker_pools_.find(w.id);
    if (cached == worker_pools_.end()) {
      std::optional<scheduler::Worker> parsed;
      const jobs::WorkerCapabilities* caps = &w.capabilities;
      if (!caps->instance) {  // not a cloud instance's worker
        scheduler::Worker sw;
        sw.id = std::to_string(w.id);
        sw.gpu_model = worker_device(*caps);
        if (const double peak = worker_cpu_peak_tflops(*caps); peak > 0) {
          auto [at, added] = cpu_peaks_.emplace(sw.gpu_model, peak);
          if (added || at->second != peak) {
            at->second = peak;
            cpu_peaks_changed_ = true;
          }
        }
        if (!caps->gpus.empty() && !caps->gpus.front().identity()) {
          // A GPU the table does not know: timed at the conservative figures (cost::unknown_gpu_spec).
          const double gb = static_cast<double>(caps->gpus.front().memory_mb) / 1024.0;
          if (unknown_gpus_.emplace(sw.gpu_model, gb).second) cpu_peaks_changed_ = true;
        }
        sw.gpu_count = caps->gpus.empty() ? 1 : static_cast<int>(caps->gpus.size());
        sw.runs_commands = caps->commands;
        sw.containers = {!caps->containers.empty(), caps->mounts};
        const int64_t mem_mb = caps->gpus.empty() ? caps->memory_mb : caps->gpus.front().memory_mb;
        sw.gpu_memory_gb = mem_mb > 0 ? static_cast<double>(mem_mb) / 1024.0 : 1e6;  // 0: not reported
        parsed = std::move(sw);
      }
      cached = worker_pools_.emplace(w.id, std::move(parsed)).first;
    }
    if (!cached->second) continue;
    scheduler::Worker sw = *cached->second;
    if (auto it = held->find(w.id); it != held->end()) {
      if (w.capabilities.gpus.empty()) {
        sw.busy = true;  // a CPU machine is one device: taken whole
        sw.busy_until_ms = *std::max_element(it->second.begin(), it->second.end());
      } else {
        sw.held_until = it->second;
      }
    }
    capacity.add_worker(std::move(sw));
  }
  for (auto& partition : partitions) capacity.add_partition(std::move(partition));
  return capacity;
}

Expected<PlacementPasses::Decision> PlacementPasses::decide(const store::JobRow& row, const train::JobSpec& spec,
                                                            int64_t now_ms, const scheduler::PlacementContext& ctx,
                                                            const scheduler::LocalCapacity& capacity) {
  auto progressed = done_fraction(row.progress_json, row.id);
  if (!progressed) return progressed.error();
  const double done = *progressed;
  const double remaining = std::max(1.0 - done, 0.001);
  // A command job with no runtime hint is priced from the earlier runs of its job key (name and
  // command), when there are some (daemon/placement/command_runtime_history.h).
  const train::JobSpec* priced = &spec;
  train::JobSpec with_history;
  std::string runtime_note;
  if (spec.is_command() && !spec.estimate) {
    auto history = command_runtimes_.lookup(spec);
    if (!history) return history.error();
    if (*history) {
      with_history = spec;
      with_history.estimate = train::RuntimeEstimate{(*history)->hours, (*history)->gpu, std::nullopt};
      priced = &with_history;
      runtime_note = command_runtime_note(spec.name, **history);
    }
  }
  // A job moved to a named option is placed there only (daemon/jobs/job_moves.h).
  const jobs::MoveTarget target = jobs_.move_target(row.id);
  scheduler::Job job = remaining_work(row, *priced, done, target);
  if (!runtime_note.empty()) job.workload.runtime_note = runtime_note;
  // Whether this job is unplaceable follows from its rejections, and (held to spot) from whether
  // it has a deadline for the policy below to weigh.
  std::string unplaceable_key = scheduler::rejection_key(job) + (job.deadline_hours ? "|deadline" : "|");

  std::vector<Candidate> table;
  auto d = scheduler::place(job, ctx, capacity, now_ms, &table);

  // Spot deadline policy, asked whenever a job with a deadline that may run on spot is placed in
  // the cloud — at its first placement as at every interruption, spot launchable or not — as the
  // simulator asks it at every tick: a policy whose safety net fires at once would otherwise start
  // on spot and move a period later, and one that learns from what it sees (adaptive) would miss
  // the outage that interrupted the job. What it answers is done: spot where spot can be
  // launched; on demand; or wait (none, spot launchable or not) — the job stays queued and the
  // policy is asked again at every re-evaluation, as the simulator asks it at every tick.
  json policy_note = nullptr;
  const bool spot_launchable = d.outcome == Outcome::launch_spot;
  // No spot offer can be launched, and the cloud is where the job would go: on demand by place()'s
  // choice, or nowhere because the job is held to spot (moved there to wait for it).
  auto cloud_without_spot = [&] {
    if (job.spot == train::SpotMode::never) return false;
    if (d.outcome == Outcome::launch_on_demand) return !spot_launchable_now(job, ctx, now_ms);
    return d.outcome == Outcome::unplaceable && target == jobs::MoveTarget::spot;
  };
  bool moved_by_policy = false, waiting = false;
  if (job.deadline_hours && (spot_launchable || cloud_without_spot())) {
    // Held to spot: the on-demand alternative is the same cloud job without spot.
    scheduler::Job on_demand_job = job;
    on_demand_job.spot = train::SpotMode::never;
    std::vector<Candidate> on_demand_table;
    const bool held_to_spot = d.outcome == Outcome::unplaceable;
    if (held_to_spot) d = scheduler::place(on_demand_job, ctx, capacity, now_ms, &on_demand_table);
    double total_hours = 0;  // the whole job's compute on the fastest fitting on-demand option
    for (const auto& c : held_to_spot ? on_demand_table : table)
      if (c.kind == OptionKind::on_demand &&
          (c.rejection == scheduler::Rejection::none || c.rejection == scheduler::Rejection::price_cap))
        total_hours = total_hours == 0 ? c.estimated_hours : std::min(total_hours, c.estimated_hours);
    if (total_hours <= 0) total_hours = d.choice.estimated_hours;
    total_hours /= remaining;
    scheduler::ProgressState s = deadlines_.progress(row.created_ms, now_ms, *job.deadline_hours, total_hours, done,
                                                     scheduler::Capacity::none);
    s.spot_available = spot_launchable;
    const scheduler::Capacity next = deadlines_.at_placement(row.id, s);
    policy_note = {{"policy", deadlines_.policy_name()}, {"decision", scheduler::to_string(next)},
                   {"spot_available", spot_launchable},   {"elapsed_hours", s.elapsed_hours},
                   {"total_compute_hours", total_hours},
                   {"remaining_compute_hours", s.remaining_compute()}, {"remaining_hours", s.remaining_time()}};
    if (held_to_spot) {
      if (d.outcome == Outcome::unplaceable) {
        d = scheduler::place(job, ctx, capacity, now_ms, &table);  // nothing runs it: say why on spot
      } else if (next != scheduler::Capacity::on_demand) {
        waiting = true;
        table = std::move(on_demand_table);
        scheduler::hold_for_spot(d, &table);
      } else {
        moved_by_policy = true;
        table = std::move(on_demand_table);
      }
    } else if (spot_launchable && next == scheduler::Capacity::on_demand) {
      moved_by_policy = true;
      job = on_demand_job;
      d = scheduler::place(job, ctx, capacity, now_ms, &table);
    } else if (next == scheduler::Capacity::none || (!spot_launchable && next != scheduler::Capacity::on_demand)) {
      // A wait where spot could be launched too (the window not worth its changeover to the
      // policy) is one as well: the simulator waits there.
      waiting = true;
      scheduler::hold_for_spot(d, &table);
    }
    if (held_to_spot) job = on_demand_job;  // the job the document describes
  }

  const std::string price_jump_note = bound_price_jump(job, d, table, now_ms, ctx, capacity);

  Decision out;
  out.placed = d.outcome != Outcome::unplaceable && d.outcome != Outcome::wait_spot;
  out.waiting_for_spot = waiting;
  if (d.outcome == Outcome::unplaceable) out.unplaceable_key = std::move(unplaceable_key);
  out.placement = scheduler::placement_json(d, table, job, ctx, capacity,
                                            scheduler::PlacementDocumentInfo{settings_.cloud_provider, now_ms, remaining});
  // Where the runtime estimates come from, so that a client can say an assumed hour is one.
  out.placement["runtime_basis"] = job.workload.assumed_hours ? "assumed"
                                   : !runtime_note.empty()    ? "history"
                                   : spec.is_command()        ? "estimate"
                                                              : "model";
  if (!price_jump_note.empty()) out.placement["reason"] = out.placement["reason"].get<std::string>() + price_jump_note;
  if (!policy_note.is_null()) {
    if (moved_by_policy)
      out.placement["reason"] = out.placement["reason"].get<std::string>() + "; the " + deadlines_.policy_name() +
                                " deadline policy moved it to on-demand";
    if (waiting)
      out.placement["reason"] = out.placement["reason"].get<std::string>() + " (the " + deadlines_.policy_name() +
                                " deadline policy, asked again every re-evaluation)";
    out.placement["deadline_policy"] = std::move(policy_note);
  }
  return out;
}

Expected<json> PlacementPasses::quote(const train::JobSpec& spec) {
  store::JobRow row;
  row.created_ms = clock_.now_ms();
  auto capacity = local_capacity();
  if (!capacity) return capacity.error();
  auto d = decide(row, spec, row.created_ms, *context(nullptr), *capacity);
  if (!d) return d.error();
  return std::move(d->placement);
}

Status PlacementPasses::place(const std::vector<int64_t>& ids, bool skip_unchanged) {
  if (ids.empty()) return {};
  // One read of the workers and their leases for the whole pass, not one per job.
  auto capacity = local_capacity();
  if (!capacity) return capacity.error();
  uint64_t offers_generation = 0;
  const auto ctx = context(&offers_generation);
  // What an unplaceable job's fate depends on besides its key: the local pools that exist and
  // how many workers each has (a gang needs that many), the Slurm partitions (and the gang nodes
  // each runs) and the usable
  // offers; calibration changes estimates, never whether anything
  // can run a job. While these are unchanged, deciding a job of a key tried under them gives the
  // same answer, so a pass may skip it (a queue of thousands of jobs nothing can run would
  // otherwise cost a decision and a write each, every pass).
  // Before the fleet is seen (see the header) an unplaceable job's event waits. Seeing it is an
  // input too: a job decided before is decided again, once per key, when the grace ends.
  const bool fleet_unseen = capacity->pools().empty() && capacity->partitions().empty() &&
                            clock_.now_ms() < fleet_grace_until_ms_;
  std::string inputs = std::to_string(offers_generation) + (fleet_unseen ? ";fleet unseen;" : ";");
  for (const auto& pool : capacity->pools())
    inputs += pool.gpu_model + "x" + std::to_string(pool.gpu_count) + ":" + std::to_string(pool.gpu_memory_gb) +
              (pool.runs_commands ? ":commands" : "") + (pool.containers.runs_images ? ":images" : "") +
              [&] {
                std::string m;
                for (const auto& a : pool.containers.mounts) m += ":" + a.prefix + (a.writable ? "+rw" : "");
                return m;
              }() +
              ":" + std::to_string(pool.workers) + ";";
  for (const auto& partition : capacity->partitions())
    inputs += "slurm:" + partition.name + ":" + std::to_string(partition.wait_hours.size()) + ":" +
              std::to_string(partition.machines) + ";";
  if (inputs != inputs_) {
    inputs_ = std::move(inputs);
    ++inputs_generation_;
  }
  const uint64_t generation = inputs_generation_;
  // Decisions are queued as deferred store changes a group at a time: the writer commits them a
  // few per transaction between the other changes (a submit waits behind at most a few), and the
  // pass never queues more than a group ahead of what committed.
  constexpr size_t kGroup = 64;
  struct Pending {
    Mutex mu;
    CondVar cv;
    size_t left JOBCTL_GUARDED_BY(mu) = 0;
    Status first_error JOBCTL_GUARDED_BY(mu);
  };
  auto pending = std::make_shared<Pending>();
  // Waits for every queued decision's commit once `at_least` are queued.
  auto wait_for_group = [&pending](size_t at_least) {
    MutexLock lock(pending->mu);
    if (pending->left < at_least) return;
    while (pending->left > 0) pending->cv.wait(pending->mu);
  };
  // Queues one change of a decision (see below).
  auto queue_change = [this, &pending, &wait_for_group](int64_t job_id, std::function<Status(WriteTxn&)> change) {
    {
      MutexLock lock(pending->mu);
      ++pending->left;
    }
    // Deferred: a decision is derived state (lost in a power cut, the next pass takes it again;
    // the change checks its job is unchanged), and a backlog of them must not hold up submits.
    store_.write_async(
        std::move(change),
        [pending, job_id](Status st) {
          MutexLock lock(pending->mu);
          if (!st && pending->first_error)
            pending->first_error = make_error(st.error().code, "job " + std::to_string(job_id) + ": " + st.error().message);
          if (--pending->left == 0) pending->cv.signal_all();
        },
        store::Durability::deferred);
    wait_for_group(kGroup);
  };
  Status result;
  for (int64_t job_id : ids) {
    // Stopping (SIGTERM): what is left stays queued, decided by the next start.
    if (stopping_.load(std::memory_order_relaxed)) break;
    // Left out before its row is read: a pass over a long queue nothing can run reads no rows.
    if (skip_unchanged) {
      auto it = unplaceable_keys_.find(job_id);
      if (it != unplaceable_keys_.end() && it->second->second.tried_under == generation) {
        // Its key was just tried with the fleet seen and stays unplaceable: the event it held is
        // written from its stored document, without deciding it again.
        if (!fleet_unseen && event_held_.erase(job_id) > 0) queue_change(job_id, [job_id, now = clock_.now_ms()](WriteTxn& txn) -> Status {
            auto cur = txn.job(job_id);
            if (!cur) return cur.error();
            if (!*cur || (*cur)->state != store::JobState::queued || !(*cur)->placement_json) return {};
            auto p = store::decode_placement_document(*(*cur)->placement_json, "job " + std::to_string(job_id));
            if (!p) return {};  // unreadable: the next decision replaces it
            return jobs::note_job_event(txn, job_id, "unplaceable", json{{"reason", p->value("reason", "")}}, now);
          });
        continue;
      }
    }
    auto found = store_.get_job(job_id);
    if (!found) {
      keep_first(result, job_id, found.error());
      continue;
    }
    if (!*found || (*found)->state != store::JobState::queued) {
      forget_unplaceable(job_id);
      event_held_.erase(job_id);
      continue;
    }
    const store::JobRow row = std::move(**found);
    auto stored_spec = row.decoded_spec();
    if (!stored_spec) {
      keep_first(result, job_id, stored_spec.error());
      continue;
    }
    const train::JobSpec& spec = **stored_spec;
    // A job that runs after others (its `after`) is decided once they have ended as asked; until
    // then nothing offers it to a worker. One whose dependency never will is cancelled, saying why.
    if (!spec.after.empty()) {
      auto check = jobs::check_dependencies(store_, spec.after);
      if (!check) {
        keep_first(result, job_id, check.error());
        continue;
      }
      if (check->verdict != jobs::DependencyCheck::Verdict::met) {
        forget_unplaceable(job_id);
        event_held_.erase(job_id);
        if (check->verdict == jobs::DependencyCheck::Verdict::failed)
          if (auto c = jobs_.cancel_for_dependency(job_id, check->reason); !c && c.error().code != ErrorCode::conflict)
            keep_first(result, job_id, c.error());
        continue;
      }
    }
    const int64_t now = clock_.now_ms();
    const auto started = std::chrono::steady_clock::now();  // a duration for the metric, not a time
    auto d = decide(row, spec, now, *ctx, *capacity);
    {
      MutexLock lock(observers_mu_);
      if (decision_observer_)
        decision_observer_(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
    if (!d) {
      keep_first(result, job_id, d.error());
      continue;
    }
    const bool placed = d->placed;
    // A job waiting for spot is decided again every pass: its policy's answer moves with the clock.
    std::optional<std::string> unplaceable_key;
    // hold_event: the fleet is not seen yet; force_event: it is now, and this job's event waited.
    bool hold_event = false, force_event = false;
    if (placed || d->waiting_for_spot) {
      forget_unplaceable(job_id);
      event_held_.erase(job_id);
    } else {
      hold_event = fleet_unseen;
      force_event = !fleet_unseen && event_held_.erase(job_id) > 0;
      if (hold_event) event_held_.insert(job_id);
      index_unplaceable(job_id, d->unplaceable_key, generation);
      unplaceable_key = std::move(d->unplaceable_key);
    }
    // Read here, not on the writer: a document is kilobytes of JSON, and the writer serves submits.
    // No other writer changes a queued job's document (passes run one at a time, each waits for its
    // commits), so the row read above holds the document the change below replaces.
    std::string previous_reason;
    if (row.placement_json) {
      // An unreadable earlier document is replaced below; only its reason is compared.
      if (auto p = store::decode_placement_document(*row.placement_json, "job " + std::to_string(job_id)))
        previous_reason = p->value("reason", "");
    }
    auto text = store::deflate_text(d->placement.dump());
    if (!text) {
      keep_first(result, job_id, text.error());
      continue;
    }
    std::optional<store::PlacementChoice> chosen;
    json detail = {{"reason", d->placement["reason"]}};
    if (placed) {
      const json& c = d->placement["chosen"];
      auto decoded = store::placement_choice_from_json(c);
      if (!decoded) {
        keep_first(result, job_id, decoded.error());
        continue;
      }
      chosen = std::move(*decoded);
      detail["option"] = c["option"];
      detail["gpu"] = c["gpu"];
      detail["usd_per_hour"] = c["usd_per_hour"];
      detail["estimated_cost_usd"] = c["estimated_cost_usd"];
      if (!c["instance_type"].is_null()) detail["instance_type"] = c["instance_type"];
    }
    const char* not_placed_event = d->waiting_for_spot ? "waiting_for_spot" : "unplaceable";
    // The GPUs the job takes: with "auto" the count chosen to fit on the option placed on (the
    // lease, Slurm's --gpus and the ledger read it from the row), the least it runs on until then.
    int resource_gpus = row.resource_gpus;
    if (spec.resources.gpus_auto) {
      resource_gpus = cost::requested_gpus(spec);
      if (chosen && chosen->job_gpus > 0) resource_gpus = chosen->job_gpus;
      if (placed) detail["job_gpus"] = resource_gpus;
    }
    auto change = [this, job_id, placed, not_placed_event, text = std::move(*text), chosen = std::move(chosen), detail, now,
                   resource_gpus, hold_event, force_event,
                   unplaceable_key = std::move(unplaceable_key), previous_reason = std::move(previous_reason),
                   expected_updated = row.updated_ms](WriteTxn& txn) -> Status {
      auto cur = txn.job(job_id);
      if (!cur) return cur.error();
      // Changed meanwhile (cancelled, leased by a FIFO matcher): this decision is stale.
      if (!*cur || (*cur)->state != store::JobState::queued || (*cur)->updated_ms != expected_updated) return {};
      store::JobRow job = std::move(**cur);
      job.chosen = chosen;
      job.resource_gpus = resource_gpus;
      if (auto st = txn.put_placement(job.id, text, unplaceable_key); !st) return st;
      if (placed) {
        job.worker_id.reset();
        if (auto st = jobs::transition_job(txn, job, store::JobState::placed, "placed", detail, now); !st) return st;
        jobs::QueuedJob q = jobs::queued_from(job);  // placed: with its placement
        txn.on_commit([this, q] {
          jobs_.job_placed(q);
          if (!q.placement_option || *q.placement_option == store::OptionKind::local) return;
          MutexLock lock(observers_mu_);
          if (launch_observer_) launch_observer_(q.id);
        });
        return {};
      }
      if (auto st = txn.update_job(job); !st) return st;  // state unchanged; the document refreshed
      if (hold_event) return {};
      if (force_event || previous_reason != detail["reason"].get<std::string>())
        return jobs::note_job_event(txn, job.id, not_placed_event, detail, now);
      return {};
    };
    queue_change(job_id, std::move(change));
  }
  wait_for_group(0);
  MutexLock lock(pending->mu);
  if (!pending->first_error && result) result = pending->first_error;
  return result;
}

}  // namespace jobctl::daemon::placement
