#include "daemon/placement/placement_service.h"

#include <set>

namespace jobctl::daemon::placement {

PlacementService::PlacementService(store::Store& store, const Clock& clock, jobs::JobService& jobs,
                                   PlacementSettings settings)
    : store_(store),
      clock_(clock),
      jobs_(jobs),
      settings_(std::move(settings)),
      calibration_(store, clock),
      deadlines_(store, clock,
                 SpotDeadlineSettings{settings_.deadline_policy, settings_.provision_hours, settings_.reevaluate_s},
                 &jobs),
      passes_(store, clock, jobs, settings_, offers_, calibration_, deadlines_),
      savings_(store, clock, jobs, settings_, passes_),
      priority_(store, jobs) {
  if (settings_.fair_share.enabled.value_or(false)) fair_share_.emplace(store, settings_.fair_share);
}

Status PlacementService::start() {
  MutexLock lock(tick_mu_);
  std::vector<std::string> warnings;
  auto offers = load_offers(settings_, &warnings);
  if (!offers) return offers.error();
  offers_.reset(std::move(*offers));
  if (auto st = calibration_.load(); !st) return st;
  jobs_.add_observer(this);
  // Jobs queued before this start (or while placement was off) are decided on the first tick;
  // those a decision found unplaceable, one per what they need (PlacementPasses::load_queue).
  if (auto st = passes_.load_queue(); !st) return st;
  started_ = true;
  return {};
}

PlacementService::~PlacementService() { jobs_.remove_observer(this); }

Expected<std::optional<std::map<std::string, scheduler::FairShareEntry>>> PlacementService::fair_share() {
  if (!fair_share_) return std::optional<std::map<std::string, scheduler::FairShareEntry>>();
  auto owned = store_.owned_open_jobs();
  if (!owned) return owned.error();
  std::set<std::string> users;
  for (const auto& o : *owned) users.insert(o.owner);
  auto factors = fair_share_->factors(clock_.now_ms(), {users.begin(), users.end()});
  if (!factors) return factors.error();
  return std::optional<std::map<std::string, scheduler::FairShareEntry>>(std::move(*factors));
}

Expected<double> PlacementService::estimated_cost_usd(const train::JobSpec& spec) {
  auto quote = passes_.quote(spec);
  if (!quote) return quote.error();
  const nlohmann::json& chosen = (*quote)["chosen"];
  return chosen.is_object() ? chosen.value("estimated_cost_usd", 0.0) : 0.0;
}

// The observer's methods run on writer-thread commits and request threads: they record, the tick works.
void PlacementService::job_needs_placement(int64_t job_id) {
  if (passes_.request(job_id)) wake();
}

void PlacementService::job_progressed(int64_t job_id, int64_t worker_id, const std::string& progress_json) {
  if (calibration_.record(job_id, worker_id, progress_json)) wake();
}

void PlacementService::job_succeeded(int64_t job_id, int64_t worker_id, const std::string& result_json) {
  passes_.job_finished();
  if (calibration_.record_finished(job_id, worker_id, result_json)) wake();
}

void PlacementService::worker_available(int64_t) {
  if (passes_.capacity_changed()) wake();
}

void PlacementService::wake() {
  MutexLock lock(wake_mu_);
  if (wake_observer_) wake_observer_();
}

void PlacementService::tick() {
  MutexLock lock(tick_mu_);
  if (!started_) return;
  calibration_log_.report(calibration_.apply_recorded(), *log_, clock_.now_ms());
  requested_log_.report(passes_.run_requested(), *log_, clock_.now_ms());
  if (clock_.now_ms() - last_reevaluation_ms_ >= int64_t{settings_.reevaluate_s} * 1000)
    reevaluation_log_.report(reevaluate_locked(), *log_, clock_.now_ms());
  // After the decisions: a job placed this tick is planned (and reserved for) at once.
  if (reservations_) reservation_log_.report(reservations_->run(), *log_, clock_.now_ms());
}

Status PlacementService::reevaluate() {
  MutexLock lock(tick_mu_);
  return reevaluate_locked();
}

Status PlacementService::reevaluate_locked() {
  last_reevaluation_ms_ = clock_.now_ms();
  Status result = passes_.reevaluate_queue();
  // Whether spot can run the rest of a job now.
  const auto ctx = passes_.context(nullptr);
  const int64_t now = clock_.now_ms();
  auto spot_launchable = [&ctx, now](const store::JobRow& row, const train::JobSpec& spec, double done) {
    return spot_launchable_now(remaining_work(row, spec, done, jobs::MoveTarget::anywhere), *ctx, now);
  };
  if (auto st = deadlines_.check_running(spot_launchable); !st && result) result = st;
  if (auto moved = savings_.check(); !moved && result) result = moved.error();
  if (auto moved = priority_.check(); !moved && result) result = moved.error();
  return result;
}

}  // namespace jobctl::daemon::placement
