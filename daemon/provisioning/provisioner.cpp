#include "daemon/provisioning/provisioner.h"

#include <algorithm>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "base/fixed_decimal.h"
#include "base/log_line.h"
#include "daemon/jobs/job_transition.h"
#include "daemon/jobs/worker_capabilities.h"

namespace jobctl::daemon::provisioning {

using nlohmann::json;
using store::InstanceRow;
using store::WriteTxn;

namespace {

// The pause before an offer whose launch failed is tried again: 2 s, 4 s, 8 s, ... up to 2 min,
// each shortened by a random share of up to half (base/retry.h), so that jobs placed on one
// market do not all retry together. Within cloud.launch_attempts failures of one job the offer is
// set aside for cloud.unavailable_cooldown_s anyway.
const RetryPolicy kLaunchBackoff{.max_attempts = 0,
                                 .first_delay = std::chrono::seconds(2),
                                 .max_delay = std::chrono::minutes(2),
                                 .multiplier = 2.0,
                                 .jitter = 0.5};

bool ending(const InstanceRow& r) { return r.state == "shutting-down" || r.state == "stopping"; }

std::string resource_of(const InstanceRow& r) { return "instance:" + r.id; }

// The price an instance is billed at, from the offer it was launched from.
double offer_price(const cost::Offer& o, bool spot) {
  return spot && o.spot_usd_per_hour ? *o.spot_usd_per_hour : o.on_demand_usd_per_hour;
}

// The catalog's offer of an instance type in a region and zone. An empty zone takes the region's
// first; an empty region the type's first.
const cost::Offer* find_offer(const std::vector<cost::Offer>& offers, const std::string& type,
                              const std::string& region, const std::string& zone) {
  const cost::Offer* any = nullptr;
  const cost::Offer* in_region = nullptr;
  for (const auto& o : offers) {
    if (o.instance_type != type) continue;
    if (!any) any = &o;
    if (o.region != region) continue;
    if (o.zone == zone) return &o;
    if (!in_region) in_region = &o;
  }
  if (region.empty()) return any;
  return zone.empty() ? in_region : nullptr;
}

// The chosen cloud option of a placed job (from its chosen candidate).
struct CloudChoice {
  std::string instance_type;
  std::string region;
  std::string zone;  // where it was priced: the instance is launched there
  bool spot = false;
};

std::optional<CloudChoice> cloud_choice(const store::JobRow& job) {
  if (!job.chosen || !job.chosen->on_cloud() || job.chosen->instance_type.empty()) return std::nullopt;
  const store::PlacementChoice& c = *job.chosen;
  return CloudChoice{c.instance_type, c.region, c.zone, c.option == store::OptionKind::spot};
}

// A job that runs on instances launched for it alone: a command job (the user's own program),
// and a gang (its nodes find each other only on instances launched together for it).
bool needs_own_instances(const store::QueuedJobRow& q) { return q.command || q.nodes > 1; }

}  // namespace

// What one pass knows about the instances' workers: read once, used by every step.
struct Provisioner::Workers {
  std::vector<InstanceRow> rows;                    // every instance row (after the sync)
  std::map<std::string, int64_t> worker_of;          // instance id -> its newest registered worker
  std::map<int64_t, int64_t> job_of;                 // worker id -> the job it holds
  std::vector<store::QueuedJobRow> waiting;          // placed jobs nobody has leased yet

  std::optional<int64_t> worker(const std::string& instance_id) const {
    auto it = worker_of.find(instance_id);
    return it == worker_of.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  std::optional<int64_t> job(const std::string& instance_id) const {
    auto w = worker(instance_id);
    if (!w) return std::nullopt;
    auto it = job_of.find(*w);
    return it == job_of.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  // Placed jobs waiting for an instance of this kind (an instance shared between jobs: command
  // jobs and gangs wait for instances of their own).
  int waiting_for(const std::string& type, bool spot) const {
    int n = 0;
    for (const auto& q : waiting)
      if (!needs_own_instances(q) && q.placement_instance_type == type &&
          (q.placement_option == store::OptionKind::spot) == spot)
        ++n;
    return n;
  }
  // Whether a placed job waits for the instance launched for it alone. A gang's nodes run in the
  // one zone its placement priced: an instance of its in another zone is not one of them.
  bool waits_for(const InstanceRow& dedicated) const {
    for (const auto& q : waiting)
      if (q.id == dedicated.job_id && q.placement_instance_type == dedicated.instance_type &&
          (q.placement_option == store::OptionKind::spot) == dedicated.spot &&
          (q.nodes <= 1 || q.placement_zone.empty() || q.placement_zone == dedicated.zone))
        return true;
    return false;
  }
};

Provisioner::Provisioner(store::Store& store, const Clock& clock, jobs::JobService& jobs, placement::PlacementService& placement,
                         std::unique_ptr<cloud::Provider> provider, CloudSettings settings)
    : store_(store),
      clock_(clock),
      jobs_(jobs),
      placement_(placement),
      provider_(std::move(provider)),
      settings_(std::move(settings)),
      ledger_(store) {}

Provisioner::~Provisioner() { stop(); }

void Provisioner::set_server_url(std::string url) {
  MutexLock lock(mu_);
  server_url_ = std::move(url);
}

void Provisioner::start() {
  MutexLock lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { loop(); });
}

void Provisioner::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.signal_all();
  if (thread_.joinable()) thread_.join();
}

void Provisioner::wake() {
  {
    MutexLock lock(mu_);
    woken_ = true;
  }
  cv_.signal_all();
}

bool Provisioner::reconciled() const {
  MutexLock lock(mu_);
  return reconciled_;
}

std::string Provisioner::last_error() const {
  MutexLock lock(mu_);
  return last_error_;
}

void Provisioner::loop() {
  std::string logged;
  for (;;) {
    auto pass = run_pass();
    // Log a failing provider once per distinct error, not every poll.
    const std::string err = pass ? std::string() : pass.error().message;
    if (err != logged) {
      if (!err.empty()) LogLine() << "jobctld: provisioner: " << err;
      else LogLine() << "jobctld: provisioner: provider reachable again";
      logged = err;
    }
    MutexLock lock(mu_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(settings_.poll_s);
    while (!stopping_ && !woken_ && cv_.wait_until(mu_, deadline)) {
    }
    if (stopping_) return;
    woken_ = false;
  }
}

Status Provisioner::put(const InstanceRow& row) {
  return store_.write([row](WriteTxn& txn) { return txn.put_instance(row); });
}

Expected<ProvisionerPass> Provisioner::run_pass() {
  MutexLock pass_lock(pass_mu_);
  ProvisionerPass pass;
  auto fail = [this](Error e) -> Expected<ProvisionerPass> {
    MutexLock lock(mu_);
    last_error_ = e.message;
    return e;
  };
  const int64_t now = clock_.now_ms();
  // Without the provider's view nothing else is safe: a launch could duplicate an instance the
  // provider already runs, an idle stop could hit an instance that is in fact gone.
  auto described = provider_->describe(settings_.tag);
  if (!described) return fail(described.error());
  if (auto st = sync(*described, pass, now); !st) return fail(st.error());
  {
    MutexLock lock(mu_);
    reconciled_ = true;
  }

  auto snap = snapshot();
  if (!snap) return fail(snap.error());
  Workers& w = *snap;

  Status result;
  auto keep_first = [&result](Status st) {
    if (!st && result) result = std::move(st);
  };
  keep_first(record_notices(w, pass));
  keep_first(release_lost_leases(w, pass));
  keep_first(accrue(w, now));
  keep_first(stop_idle(w, pass, now));
  keep_first(launch_for_placed_jobs(w, pass, now));
  if (!result) return fail(result.error());
  {
    MutexLock lock(mu_);
    last_error_.clear();
  }
  return pass;
}

Expected<Provisioner::Workers> Provisioner::snapshot() {
  Workers w;
  auto rows = store_.list_instances();
  if (!rows) return rows.error();
  w.rows = std::move(*rows);
  auto workers = store_.list_workers();
  if (!workers) return workers.error();
  for (const auto& wr : *workers) {  // id order: a re-registration replaces the older worker
    const auto& instance = wr.capabilities.instance;
    if (instance && !instance->id.empty()) w.worker_of[instance->id] = wr.id;
  }
  auto leases = store_.active_leases();
  if (!leases) return leases.error();
  for (const auto& [job_id, worker_id] : *leases) w.job_of[worker_id] = job_id;
  auto waiting = store_.placed_waiting_jobs();
  if (!waiting) return waiting.error();
  for (auto& q : *waiting)
    if (q.placement_option && scheduler::is_cloud(*q.placement_option)) w.waiting.push_back(std::move(q));
  return w;
}

// ------------------------------------------------------------------ 1. sync with the provider

Status Provisioner::sync(const std::vector<cloud::Instance>& described, ProvisionerPass& pass, int64_t now) {
  auto rows = store_.list_instances();
  if (!rows) return rows.error();
  std::map<std::string, InstanceRow> known;
  for (auto& r : *rows) known.emplace(r.id, std::move(r));
  std::set<std::string> seen;
  const auto offers = placement_.offers();

  for (const auto& inst : described) {
    seen.insert(inst.id);
    auto it = known.find(inst.id);
    if (it == known.end()) {
      if (inst.terminated()) continue;  // ended before we knew it: nothing to bill or watch
      InstanceRow r;
      r.id = inst.id;
      r.provider = std::string(provider_->kind());
      r.instance_type = inst.instance_type;
      r.region = inst.region;
      r.zone = inst.zone;
      r.spot = inst.spot;
      r.state = inst.state;
      r.launched_ms = inst.launched_ms > 0 ? inst.launched_ms : now;
      const cost::Offer* o = find_offer(offers, inst.instance_type, inst.region, inst.zone);
      if (!o) o = find_offer(offers, inst.instance_type, inst.region, "");
      r.usd_per_hour = inst.usd_per_hour > 0 ? inst.usd_per_hour : (o ? offer_price(*o, inst.spot) : 0);
      r.on_demand_usd_per_hour = o ? o->on_demand_usd_per_hour : r.usd_per_hour;
      r.reason = "adopted: running with tag " + settings_.tag + " but unknown to this daemon";
      r.segment_start_ms = r.launched_ms;
      LogLine() << "jobctld: provisioner: adopted instance " << r.id << " (" << r.instance_type
                << (r.spot ? " spot" : " on demand") << ")";
      if (auto st = put(r); !st) return st;
      ++pass.adopted;
      continue;
    }
    InstanceRow r = it->second;
    if (!r.live()) continue;
    InstanceRow before = r;
    // Billing ends when the cloud says it did (a terminate asked for stops billing at once, even
    // while the machine is still shutting down), not when this pass happened to notice.
    std::optional<int64_t> cloud_end;
    if (inst.ended_ms) cloud_end = std::clamp(*inst.ended_ms, r.launched_ms, std::max(now, r.launched_ms));
    if (inst.terminated()) {
      r.state = "terminated";
      r.ended_ms = cloud_end.value_or(now);
      // Ours when we asked for it (idle, never booted); the provider's otherwise (reclaimed).
      if (!ending(before) && !inst.reason.empty()) r.reason = inst.reason;
      ++pass.ended;
    } else {
      r.state = inst.state;
      if (cloud_end) r.ended_ms = cloud_end;
    }
    if (!inst.zone.empty()) r.zone = inst.zone;
    // Notices are recorded from the interruption feed (record_notices), with their job event.
    if (r.state != before.state || r.zone != before.zone || r.reason != before.reason || r.ended_ms != before.ended_ms)
      if (auto st = put(r); !st) return st;
  }
  // Rows the provider no longer reports at all: it has forgotten them, so they are gone.
  for (auto& [id, r] : known) {
    if (!r.live() || seen.count(id)) continue;
    r.state = "terminated";
    r.ended_ms = now;
    r.reason = "no longer reported by the provider";
    if (auto st = put(r); !st) return st;
    ++pass.ended;
  }
  return {};
}

// ------------------------------------------------------------------ 2. interruptions

Status Provisioner::record_notices(Workers& w, ProvisionerPass& pass) {
  auto notices = provider_->interruptions(settings_.tag, notices_since_ms_);
  if (!notices) return notices.error();
  for (const auto& n : *notices) {
    notices_since_ms_ = std::max(notices_since_ms_, n.notice_ms);
    auto row = std::find_if(w.rows.begin(), w.rows.end(), [&](const InstanceRow& r) { return r.id == n.instance_id; });
    if (row == w.rows.end()) continue;
    const bool first = !row->notice_ms.has_value() || *row->notice_ms != n.notice_ms;
    if (!first) continue;
    InstanceRow r = *row;
    r.notice_ms = n.notice_ms;
    // The job its worker holds; or, when the worker already handed it back (it acts on the
    // notice within a second, often before this pass), the job the instance last ran.
    std::optional<int64_t> job = w.job(r.id);
    if (!job && r.segment_job_id > 0) job = r.segment_job_id;
    const json detail = {{"instance_id", r.id}, {"instance_type", r.instance_type}, {"spot", r.spot},
                         {"action_ms", n.action_ms}, {"reason", n.reason}};
    const int64_t at = n.notice_ms;
    if (auto st = store_.write([r, job, detail, at](WriteTxn& txn) -> Status {
          if (auto st2 = txn.put_instance(r); !st2) return st2;
          if (job) return jobs::note_job_event(txn, *job, "spot_notice", detail, at);
          return {};
        });
        !st)
      return st;
    *row = std::move(r);
    ++pass.notices;
  }
  return {};
}

Status Provisioner::release_lost_leases(const Workers& w, ProvisionerPass& pass) {
  for (const auto& r : w.rows) {
    if (r.live()) continue;
    auto worker = w.worker(r.id);
    if (!worker || !w.job_of.count(*worker)) continue;
    auto n = jobs_.release_worker_leases(*worker, "instance " + r.id + " ended (" +
                                                     (r.reason.empty() ? std::string("terminated") : r.reason) +
                                                     ") while its worker held the job");
    if (!n) return n.error();
    pass.released += *n;
  }
  return {};
}

// ------------------------------------------------------------------ 3. the ledger

Status Provisioner::accrue(Workers& w, int64_t now) {
  for (auto& original : w.rows) {
    // Rows whose billing ended before this pass were closed then; accrue each row until it has an end.
    if (original.ended_ms && original.segment_start_ms >= *original.ended_ms) continue;
    InstanceRow r = original;
    // The cloud's end once it reported one (live rows too: shutting down, no longer billed).
    const int64_t end = r.ended_ms.value_or(now);
    if (r.segment_start_ms == 0) {
      r.segment_start_ms = r.launched_ms;
      r.segment_job_id = r.job_id;
      r.segment_user = ledger::ledger_user(store_, r.job_id);
    }
    // Whose time it is now: the job its worker holds; before the worker registers, the job the
    // instance was launched for (boot time is that job's cost); otherwise no one's.
    int64_t current = r.segment_job_id;
    if (r.live() && w.worker(r.id)) current = w.job(r.id).value_or(0);
    ledger::LedgerEntry e;
    e.resource = resource_of(r);
    e.kind = r.spot ? "spot" : "on_demand";
    e.usd_per_hour = r.usd_per_hour;
    const bool changed = current != r.segment_job_id && end > r.segment_start_ms;
    e.job_id = r.segment_job_id;
    e.user = r.segment_user;
    e.start_ms = r.segment_start_ms;
    e.end_ms = std::max(end, r.segment_start_ms);
    // All on-demand, this time would have run on the same machine on demand.
    e.on_demand_usd_per_hour = r.on_demand_usd_per_hour;
    if (auto st = ledger_.accrue(e); !st) return st;
    if (changed) {  // the segment closed at `end`; the next one starts there
      r.segment_start_ms = end;
      r.segment_job_id = current;
      r.segment_user = ledger::ledger_user(store_, current);
    } else if (r.ended_ms) {
      r.segment_start_ms = end;  // closed for good: the cloud bills no more
    }
    if (r.segment_start_ms != original.segment_start_ms || r.segment_job_id != original.segment_job_id) {
      if (auto st = put(r); !st) return st;
      original = std::move(r);
    }
  }
  return {};
}

// ------------------------------------------------------------------ 4. idle and boot limits

Status Provisioner::stop_idle(Workers& w, ProvisionerPass& pass, int64_t now) {
  for (auto& original : w.rows) {
    if (!original.live() || ending(original)) continue;
    InstanceRow r = original;
    std::string why;
    const auto worker = w.worker(r.id);
    // Launched for one job alone, which neither runs on it nor waits for it: gone, unless it is
    // queued again (a gang restarted, a retry), when placement may put it back on this very kind
    // and the instance waits for it as an idle one would. Read only for such an instance.
    bool job_gone = false;
    if (r.dedicated && !w.job(r.id) && !w.waits_for(r)) {
      auto job = store_.get_job(r.job_id);
      if (!job) return job.error();
      job_gone = !*job || (*job)->state != store::JobState::queued;
    }
    if (r.notice_ms && !w.job(r.id)) {
      // Being reclaimed and its job handed back (or none taken): every second more is waste.
      why = "interruption notice, and no job left on it";
    } else if (job_gone) {
      // No other job may use it.
      why = "launched for job " + std::to_string(r.job_id) + " alone, which no longer runs or waits here";
    } else if (!worker) {
      if (now - r.launched_ms >= int64_t{settings_.boot_timeout_s} * 1000)
        why = "its worker did not register within " + std::to_string(settings_.boot_timeout_s) + " s";
    } else if (w.job(r.id) || (r.dedicated ? w.waits_for(r) : w.waiting_for(r.instance_type, r.spot) > 0)) {
      r.idle_since_ms.reset();  // busy, or about to be
    } else {
      if (!r.idle_since_ms) r.idle_since_ms = now;
      if (now - *r.idle_since_ms >= int64_t{settings_.idle_timeout_s} * 1000)
        why = "idle for " + std::to_string((now - *r.idle_since_ms) / 1000) + " s";
    }
    if (!why.empty()) {
      if (auto st = provider_->terminate(r.id); !st) return st;
      LogLine() << "jobctld: provisioner: terminating instance " << r.id << ": " << why;
      r.state = "shutting-down";
      r.reason = why;
      ++pass.terminated;
    }
    if (r.idle_since_ms != original.idle_since_ms || r.state != original.state) {
      if (auto st = put(r); !st) return st;
      original = std::move(r);
    }
  }
  return {};
}

// ------------------------------------------------------------------ 5. launches

Status Provisioner::launch_for_placed_jobs(const Workers& w, ProvisionerPass& pass, int64_t now) {
  if (w.waiting.empty()) {
    launch_failures_.clear();
    return {};
  }
  std::string server;
  {
    MutexLock lock(mu_);
    server = settings_.server_url.empty() ? server_url_ : settings_.server_url;
  }
  int live = 0;
  std::map<std::pair<std::string, bool>, int> free;  // (type, spot) -> booting or idle instances
  std::map<int64_t, int> dedicated_to;  // job -> its own instances booting or idle (a gang: in its zone)
  for (const auto& r : w.rows) {
    if (!r.live() || ending(r)) continue;
    ++live;
    if (r.notice_ms) continue;  // being reclaimed: it will take no new job
    if (r.dedicated) {
      if (w.waits_for(r)) ++dedicated_to[r.job_id];  // booting, or its worker about to lease
      continue;
    }
    if (!w.job(r.id)) ++free[{r.instance_type, r.spot}];
  }
  const auto offers = placement_.offers();
  std::set<int64_t> still_waiting;
  for (const auto& q : w.waiting) still_waiting.insert(q.id);
  for (const auto& q : w.waiting) {
    const bool spot = q.placement_option == store::OptionKind::spot;
    // A command job runs on an instance launched for it alone (its worker runs that job only); a
    // gang on as many as it has nodes, launched together in the zone its placement priced.
    int wanted = 1;
    if (needs_own_instances(q)) {
      wanted = std::max(q.nodes, 1) - dedicated_to[q.id];
      if (wanted <= 0) continue;
    } else if (int& available = free[{q.placement_instance_type, spot}]; available > 0) {
      --available;  // an instance of its kind is booting or idle: its worker will take it
      continue;
    }
    // At the cap: the rest wait for a free instance. A gang's instances are launched all at once
    // or not at all (a part of a gang would only idle, billed, until the rest fit).
    if (live + wanted > settings_.max_instances) break;
    auto job = store_.get_job(q.id);
    if (!job) return job.error();
    if (!*job) continue;
    auto choice = cloud_choice(**job);
    if (!choice) continue;
    const cost::Offer* offer = find_offer(offers, choice->instance_type, choice->region, choice->zone);
    const auto market = std::make_tuple(choice->instance_type, choice->region, choice->spot);
    const int64_t steady = clock_.steady_ms();
    if (auto b = launch_backoff_.find(market); b != launch_backoff_.end() && steady < b->second.next_try_steady_ms)
      continue;  // its last launch failed: the job waits for the backoff, placed where it is
    std::vector<cloud::Instance> launched;
    Error failure = make_error(ErrorCode::not_found, "offer " + choice->instance_type + " in " + choice->region +
                                                        (choice->zone.empty() ? "" : "/" + choice->zone) +
                                                        " is not in the catalog");
    bool failed = offer == nullptr;
    if (offer) {
      cloud::LaunchRequest req;
      req.offer = *offer;
      req.spot = choice->spot;
      req.server_url = server;
      req.tag = settings_.tag;
      req.name = "jobctl-job-" + std::to_string(q.id);
      if (needs_own_instances(q)) req.for_job = q.id;
      if (q.image) req.worker_flags = settings_.containers.worker_flags();
      for (int k = 0; k < wanted && !failed; ++k) {
        auto inst = provider_->launch(req);
        if (inst) launched.push_back(std::move(*inst));
        else {
          failed = true;
          failure = inst.error();
        }
      }
    }
    // The instances this pass launched, recorded (and billed from launch); after a failed launch
    // of a gang's, those are terminated at once: the gang cannot start on them.
    for (const cloud::Instance& inst : launched)
      if (auto st = record_launch(inst, *offer, choice->spot, q, failed, now); !st) return st;
    pass.launched += static_cast<int>(launched.size());
    live += static_cast<int>(launched.size());
    if (failed) {
      for (const cloud::Instance& inst : launched)
        if (auto st = provider_->terminate(inst.id); !st) return st;
      pass.terminated += static_cast<int>(launched.size());
      ++pass.launch_failures;
      const int failures = ++launch_failures_[q.id];
      auto backoff = launch_backoff_.try_emplace(market, LaunchBackoff{Backoff(kLaunchBackoff), 0}).first;
      const int64_t pause_ms = backoff->second.backoff.next_delay().count();
      backoff->second.next_try_steady_ms = steady + pause_ms;
      const std::string what = "launching " + choice->instance_type + (choice->spot ? " spot" : " on demand") +
                               " in " + choice->region + " failed (" + std::to_string(failures) + " of " +
                               std::to_string(settings_.launch_attempts) + ", next try of the offer in " +
                               fixed_decimal(pause_ms / 1000.0, 1) + " s): " + failure.message +
                               (launched.empty() ? std::string()
                                                 : "; the " + std::to_string(launched.size()) +
                                                       " launched with it for the gang are terminated");
      LogLine() << "jobctld: provisioner: job " << q.id << ": " << what;
      json detail = {{"instance_type", choice->instance_type}, {"region", choice->region},
                     {"spot", choice->spot}, {"attempt", failures}, {"error", failure.message},
                     {"retry_after_ms", pause_ms}};
      if (wanted > 1) detail["instances"] = wanted;
      const int64_t id = q.id;
      if (auto st = store_.write([id, detail, now](WriteTxn& txn) {
            return jobs::note_job_event(txn, id, "launch_failed", detail, now);
          });
          !st)
        return st;
      if (failures >= settings_.launch_attempts) {
        placement_.set_aside(choice->instance_type, choice->region, choice->spot,
                             steady + int64_t{settings_.unavailable_cooldown_s} * 1000);
        launch_failures_.erase(q.id);
        auto moved = jobs_.unplace(q.id, what + "; the offer is set aside for " +
                                             std::to_string(settings_.unavailable_cooldown_s) + " s");
        if (!moved) return moved.error();
      }
      continue;
    }
    launch_failures_.erase(q.id);
    launch_backoff_.erase(market);
  }
  for (auto it = launch_failures_.begin(); it != launch_failures_.end();)
    it = still_waiting.count(it->first) ? std::next(it) : launch_failures_.erase(it);
  return {};
}

Status Provisioner::record_launch(const cloud::Instance& inst, const cost::Offer& offer, bool spot,
                                  const store::QueuedJobRow& q, bool abandoned, int64_t now) {
  const auto offers = placement_.offers();
  InstanceRow r;
  r.id = inst.id;
  r.provider = std::string(provider_->kind());
  r.instance_type = offer.instance_type;
  r.region = inst.region.empty() ? offer.region : inst.region;
  r.zone = inst.zone.empty() ? offer.zone : inst.zone;
  r.spot = spot;
  r.state = abandoned ? "shutting-down" : inst.state.empty() ? "pending" : inst.state;
  r.job_id = q.id;
  r.dedicated = needs_own_instances(q);
  // Billed at the price of the zone the instance runs in: the one asked for, unless the cloud put
  // it elsewhere and did not say at what price.
  const cost::Offer* billed = &offer;
  if (inst.usd_per_hour <= 0 && r.zone != offer.zone)
    if (const cost::Offer* o = find_offer(offers, offer.instance_type, r.region, r.zone)) billed = o;
  r.usd_per_hour = inst.usd_per_hour > 0 ? inst.usd_per_hour : offer_price(*billed, spot);
  r.on_demand_usd_per_hour = billed->on_demand_usd_per_hour;
  r.launched_ms = inst.launched_ms > 0 ? inst.launched_ms : now;
  r.reason = abandoned ? "launched for job " + std::to_string(q.id) + "'s gang, whose other launches failed"
                       : "launched for job " + std::to_string(q.id);
  r.segment_start_ms = r.launched_ms;
  r.segment_job_id = q.id;
  r.segment_user = ledger::ledger_user(store_, q.id);
  const json detail = {{"instance_id", r.id}, {"instance_type", r.instance_type}, {"region", r.region},
                       {"zone", r.zone}, {"spot", r.spot}, {"usd_per_hour", r.usd_per_hour}};
  const int64_t id = q.id;
  if (auto st = store_.write([r, id, detail, now](WriteTxn& txn) -> Status {
        if (auto st2 = txn.put_instance(r); !st2) return st2;
        return jobs::note_job_event(txn, id, "instance_launched", detail, now);
      });
      !st)
    return st;
  LogLine() << "jobctld: provisioner: launched " << r.id << " (" << r.instance_type
            << (r.spot ? " spot" : " on demand") << ", $" << r.usd_per_hour << "/h) for job " << q.id;
  return {};
}

// ------------------------------------------------------------------ GET /v1/instances

Expected<std::vector<InstanceView>> Provisioner::instances() {
  auto snap = snapshot();
  if (!snap) return snap.error();
  auto totals = store_.ledger_totals_by_resource("instance:");
  if (!totals) return totals.error();
  std::vector<InstanceView> out;
  out.reserve(snap->rows.size());
  for (auto& r : snap->rows) {
    InstanceView v;
    v.worker_id = snap->worker(r.id);
    v.running_job_id = snap->job(r.id);
    if (auto t = totals->find(resource_of(r)); t != totals->end()) v.billed_usd = t->second;
    v.row = std::move(r);
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace jobctl::daemon::provisioning
