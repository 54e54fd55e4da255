// Cost-based placement inside jobctld (docs/cost-model.md, "In the daemon"): the units of
// daemon/placement/, wired to the job service and run on the placement thread.
//   - OfferBook (offer_book.h): the catalog offers, and those set aside after a failed launch;
//   - HeartbeatCalibration (heartbeat_calibration.h): finished runs' step times and elapsed time
//     -> efficiency and overhead;
//   - SpotDeadlines (spot_deadlines.h): the deadline policy at requeue and for running spot and
//     on-demand jobs;
//   - PlacementPasses (placement_passes.h): decisions for queued jobs, and quotes;
//   - SavingsMoves (savings_moves.h): running cloud jobs that an idle owned worker or a cheaper
//     cloud offer runs for less move there;
//   - PriorityMoves (priority_moves.h): a late higher-priority job takes an owned GPU from a lower one.
//   - ReservationPass (reservation_pass.h), every tick once a start board is set: the owned machines'
//     start plan, with the reservation that keeps a wide job from starving.
// Owned-GPU billing (owned_gpu_billing.h) is a lease hook of the job service, wired by main().
//
// Threads. The job service's hooks — a job queued unplaced, a heartbeat's progress, a job that
// succeeded, a worker that registered or came back — run on store commit hooks (the writer
// thread) or on request threads: they only record, and wake the placement thread
// (set_wake_observer). tick(), on the placement thread, does the work: it applies the recorded
// heartbeats and completions to the calibration, decides the
// requested jobs (and after a worker registered, the ones nothing could run), and every
// placement.reevaluate_s re-evaluates the queue, checks running spot and on-demand jobs
// against their deadlines, running cloud jobs for moves that save money, and waiting jobs for
// moves by priority. A pass that fails is logged with what failed (set_log) and tried again next
// time.
//
// Ownership and thread safety: borrows the store, the clock and the job service (all outlive
// it); owns the units. Every public method is safe from any thread; start(), tick() and
// reevaluate() run one at a time. The log is set before start().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/expected.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/pass_log.h"
#include "daemon/jobs/job_service.h"
#include "daemon/placement/fleet_plan_history.h"
#include "daemon/placement/heartbeat_calibration.h"
#include "daemon/placement/offer_book.h"
#include "daemon/placement/placement_config.h"
#include "daemon/placement/placement_passes.h"
#include "daemon/placement/priority_moves.h"
#include "daemon/placement/fair_share_usage.h"
#include "daemon/placement/reservation_pass.h"
#include "daemon/placement/savings_moves.h"
#include "daemon/placement/spot_deadlines.h"

namespace jobctl::daemon::placement {

class PlacementService final : private jobs::JobObserver {
 public:
  PlacementService(store::Store& store, const Clock& clock, jobs::JobService& jobs, PlacementSettings settings);
  // Stops observing the job service.
  ~PlacementService() override;
  PlacementService(const PlacementService&) = delete;
  PlacementService& operator=(const PlacementService&) = delete;

  // Loads the offers and the persisted calibration, observes the job service (jobs queued
  // unplaced, heartbeats, successes, workers) and requests a decision for every job already queued. Call
  // once before serving; a tick() before it does nothing.
  Status start() JOBCTL_EXCLUDES(tick_mu_);

  // Everything the placement thread does now (see the header); call it from the daemon's ticker.
  // Failures are logged.
  void tick() JOBCTL_EXCLUDES(tick_mu_);
  // The periodic part of tick() now: every queued job, then running spot jobs against their
  // deadlines (tests call it directly). Errors: the first failure; both parts run.
  Status reevaluate() JOBCTL_EXCLUDES(tick_mu_);
  // Shutdown: a pass in progress stops before its next job (PlacementPasses::stop), so that the
  // ticker's stop does not wait for a long queue to be decided. Safe from any thread.
  void stop() { passes_.stop(); }

  // The decision placement would make for this spec now (the placement document), stored nowhere.
  Expected<nlohmann::json> quote(std::string_view spec_json) {
    auto spec = jobs::decode_spec_text(spec_json);
    if (!spec) return spec.error();
    return passes_.quote(*spec);
  }
  // What the job would cost where placement would put it now: its quote's chosen
  // estimated_cost_usd (0 when nothing can run it). Budgets count it at submit.
  Expected<double> estimated_cost_usd(const train::JobSpec& spec);
  // The Slurm partitions placement offers (PlacementPasses::set_partition_source).
  void set_partition_source(PlacementPasses::PartitionSource source) {
    passes_.set_partition_source(std::move(source));
  }
  // The provisioner could not launch this offer (OfferBook::set_aside; `until_ms` steady clock).
  void set_aside(const std::string& instance_type, const std::string& region, bool spot, int64_t until_ms) {
    offers_.set_aside(instance_type, region, spot, until_ms);
  }
  std::vector<cost::Offer> offers() const { return offers_.all(); }
  // The fleet plan from this daemon's history (fleet_plan_history.h) at the clock's now, against
  // the catalog placement uses.
  Expected<cost::FleetPlan> fleet_plan(const FleetPlanRequest& request) {
    return placement::fleet_plan(store_, settings_, offers(), request, clock_.now_ms());
  }
  std::vector<cost::Calibration> calibrations() const { return calibration_.calibrations(); }
  // Fair share (`GET /v1/fair-share`): every user's share, decayed usage and factor now, over the
  // owners of open jobs, the users with a configured share and those with usage; nullopt when fair
  // share is off. Errors: the store's.
  Expected<std::optional<std::map<std::string, scheduler::FairShareEntry>>> fair_share();
  const PlacementSettings::FairShare& fair_share_settings() const { return settings_.fair_share; }

  // Observers, which may be set at any time; each must be quick. The wake observer is told when
  // work was recorded for the placement thread (e.g. to wake the ticker that calls tick()); the
  // others: see PlacementPasses.
  void set_wake_observer(std::function<void()> observer) JOBCTL_EXCLUDES(wake_mu_) {
    MutexLock lock(wake_mu_);
    wake_observer_ = std::move(observer);
  }
  void set_decision_observer(std::function<void(double seconds)> observer) {
    passes_.set_decision_observer(std::move(observer));
  }
  void set_launch_observer(std::function<void(int64_t job_id)> observer) {
    passes_.set_launch_observer(std::move(observer));
  }
  // Where failed passes are written (base/pass_log.h); default: stderr. Not owned; set before
  // start().
  void set_log(Log* log) { log_ = log; }
  // The board every tick publishes the owned machines' start plan on (reservation_pass.h), which
  // the matcher reads. Not owned; set before start(); none: no reservations are made.
  void set_start_board(StartBoard& board) JOBCTL_EXCLUDES(tick_mu_) {
    MutexLock lock(tick_mu_);
    reservations_.emplace(store_, clock_, jobs_, board, settings_.max_reservations,
                          fair_share_ ? &*fair_share_ : nullptr);
    board_ = &board;
  }
  // When a job placed on an owned machine and waiting for it is expected to start (ms since the
  // epoch; StartBoard::expected_start); nullopt: not such a job, or no board.
  std::optional<int64_t> expected_start(int64_t job_id) const {
    const StartBoard* board = board_.load();
    return board ? board->expected_start(job_id) : std::nullopt;
  }

 private:
  // What the job service tells placement (job_observer.h): recorded, and the placement thread woken.
  void job_needs_placement(int64_t job_id) override;
  void job_progressed(int64_t job_id, int64_t worker_id, const std::string& progress_json) override;
  void job_succeeded(int64_t job_id, int64_t worker_id, const std::string& result_json) override;
  void worker_available(int64_t worker_id) override;

  void wake() JOBCTL_EXCLUDES(wake_mu_);
  Status reevaluate_locked() JOBCTL_REQUIRES(tick_mu_);

  store::Store& store_;
  const Clock& clock_;
  jobs::JobService& jobs_;
  const PlacementSettings settings_;
  // Set when fair share is on (settings_.fair_share.enabled); thread-safe itself.
  std::optional<FairShareUsage> fair_share_;
  OfferBook offers_;
  HeartbeatCalibration calibration_;
  SpotDeadlines deadlines_;
  PlacementPasses passes_;
  SavingsMoves savings_;    // used under tick_mu_ only (one check at a time)
  PriorityMoves priority_;  // likewise
  Mutex wake_mu_;  // held while the wake observer runs; never held with another
  std::function<void()> wake_observer_ JOBCTL_GUARDED_BY(wake_mu_);
  Log* log_ = &stderr_log();
  PassLog calibration_log_{"placement: calibration from heartbeats"};
  PassLog requested_log_{"placement: placing new jobs"};
  PassLog reevaluation_log_{"placement: re-evaluation"};
  PassLog reservation_log_{"placement: reservations"};

  Mutex tick_mu_;  // one start, tick or reevaluate at a time
  bool started_ JOBCTL_GUARDED_BY(tick_mu_) = false;  // tick() does nothing before start()
  int64_t last_reevaluation_ms_ JOBCTL_GUARDED_BY(tick_mu_) = 0;
  std::optional<ReservationPass> reservations_ JOBCTL_GUARDED_BY(tick_mu_);
  std::atomic<const StartBoard*> board_{nullptr};
};

}  // namespace jobctl::daemon::placement
