// Cost-based placement inside jobctld (docs/cost-model.md, "In the daemon").
//
// For every job that enters the queue unplaced (submit, requeue after a preemption) and, every
// `placement.reevaluate_s`, for every job still queued, the service runs scheduler::place over
// every local pool (registered local workers grouped by GPU model, with their expected queue wait)
// and every catalog offer on demand and on spot, for the work that is left (the job's last
// reported progress) and the time left to its deadline. A decision moves the job queued -> placed
// with a `placed` event and stores the candidate table in `jobs.placement` (the JSON contract of
// docs/api.md, "The placement document"); PlacementMatcher then offers it only to a worker of the chosen kind.
// A job nothing can run stays queued with the table and the reason stored (and an `unplaceable`
// event when the reason changes); it is tried again on every re-evaluation.
//
// Spot deadline policy: for a job with a deadline that was interrupted, the configured deadline
// policy (Uniform Progress by default) is asked with its progress and the time left; when it says
// on-demand, spot candidates are ruled out for that placement. Running spot jobs are checked every
// re-evaluation: when the policy's safety net fires a `deadline_policy` event records it, and the
// job's next placement (after its interruption) is on demand. The daemon does not stop a running
// spot job on its own.
//
// Calibration: every heartbeat's step time (progress.step_ms) is an observation of efficiency for
// (worker GPU model, model kind), persisted in the `calibration` table and used by later
// estimates (the placement context is rebuilt when calibration changed).
//
// Ledger: owned GPU time of every lease on a local worker is accrued from lease to end, re-accrued
// every re-evaluation while the job runs (the interval is extended) and closed when it ends.
//
// Ownership: borrows the store, the clock and the job service (all outlive it). Thread safety:
// every public method is safe from any thread; request_placement and observe_heartbeat only
// record and return (they run on store commit hooks and HTTP threads).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/expected.h"
#include "cost/efficiency_calibrator.h"
#include "daemon/jobs/job_service.h"
#include "daemon/ledger/ledger.h"
#include "daemon/placement/placement_config.h"
#include "scheduler/deadline_policy.h"
#include "scheduler/placement.h"

namespace jobctl::daemon::placement {

class PlacementService {
 public:
  PlacementService(store::Store& store, const Clock& clock, jobs::JobService& jobs, PlacementSettings settings);
  PlacementService(const PlacementService&) = delete;
  PlacementService& operator=(const PlacementService&) = delete;

  // Loads the offers and the persisted calibration, and hooks into the job service (queued and
  // heartbeat observers). Call once before serving.
  Status start();

  // The decision placement would make for this spec now (same JSON as jobs.placement), without
  // submitting anything. Errors: the spec's.
  Expected<nlohmann::json> quote(std::string_view spec_json);
  // Places one job now if it is queued; returns its stored placement JSON (nullopt: not queued).
  Expected<std::optional<nlohmann::json>> place_job(int64_t job_id);
  // Records that a job wants placement (it is placed on the next tick).
  void request_placement(int64_t job_id);
  // Places requested jobs; every reevaluate_s also re-places queued ones, accrues local leases
  // and checks running spot jobs against the deadline policy. Call from the daemon's ticker.
  void tick();
  // Everything tick() does every reevaluate_s, now (tests call it directly); the ledger accrual of
  // local leases only when `accrue` (tick(): every ledger_accrual_s).
  Status reevaluate(bool accrue = true);

  // The provisioner could not launch this offer (no capacity, a refused request): placement
  // leaves it out until `until_ms` — for spot only its spot market, for on-demand the whole offer.
  void set_aside(const std::string& instance_type, const std::string& region, bool spot, int64_t until_ms);
  // Told how long each placement decision took (the jobctl_placement_latency_seconds metric).
  // Set before serving; must be quick.
  void set_decision_observer(std::function<void(double seconds)> observer) {
    decision_observer_ = std::move(observer);
  }
  // Told every job placed on a cloud offer (after its commit), e.g. to wake the provisioner.
  // Set before serving; must be quick.
  void set_cloud_placed_observer(std::function<void(int64_t job_id)> observer) {
    cloud_placed_observer_ = std::move(observer);
  }
  // Told when request_placement() finds no placement pass pending (e.g. to wake the ticker that
  // calls tick()). Set before serving; must be quick.
  void set_pending_observer(std::function<void()> observer) { pending_observer_ = std::move(observer); }
  // A heartbeat's progress (JSON object text) from the worker holding the job.
  void observe_heartbeat(int64_t job_id, int64_t worker_id, const std::string& progress_json);
  // Accrues the owned-GPU time of every local lease (open ones up to now, ended ones closed).
  Status accrue_local_leases();

  const PlacementSettings& settings() const { return settings_; }
  std::vector<cost::Offer> offers() const;
  std::vector<cost::Calibration> calibrations() const;
  ledger::Ledger& ledger() { return ledger_; }

 private:
  struct Decision {
    nlohmann::json placement;   // the stored JSON
    bool placed = false;
  };
  struct OpenLease {
    int64_t worker_id = 0;
    int64_t epoch = 0;
    int64_t start_ms = 0;
    std::vector<std::string> resources;
    double usd_per_hour_each = 0;
    double on_demand_usd_per_hour = 0;  // the ledger's reference, from the job's placement
    std::string user;                   // no resources: a cloud lease (the provisioner bills it)
  };
  // What a lease's placement chose: the chosen row does not change while a lease lasts, so it is
  // parsed once per (job, epoch) for local_capacity (the estimate) and check_running_deadlines
  // (whether it is spot).
  struct LeaseChoice {
    int64_t epoch = 0;
    double estimated_hours = 1.0;  // unknown estimate: assume an hour
    bool spot = false;
  };

  std::shared_ptr<const scheduler::PlacementContext> context();
  Expected<scheduler::LocalCapacity> local_capacity(std::vector<int64_t>* worker_ids);
  Expected<Decision> decide(const store::JobRow& row, const train::JobSpec& spec, int64_t now_ms,
                            const scheduler::LocalCapacity& local);
  Status place_row(int64_t job_id);
  // One placement pass over these jobs (those still queued): one capacity read, group-committed.
  // skip_unchanged: leave out jobs that were unplaceable with the same inputs (see .cpp).
  Status place_rows(const std::vector<int64_t>& ids, bool skip_unchanged);
  // Counts changes of the offers placement may use (an offer set aside, or back).
  uint64_t offers_generation();
  Status check_running_deadlines();
  // The lease's entry of lease_choices_, parsed on first sight of its epoch. Needs mu_.
  const LeaseChoice& lease_choice_locked(const store::LeaseSummary& lease);
  // Where a deadline job stands, for the deadline policy: `total_hours` of compute of which the
  // fraction `done` is done, on `current` capacity.
  scheduler::ProgressState deadline_progress(int64_t created_ms, int64_t now_ms, double deadline_hours,
                                             double total_hours, double done,
                                             scheduler::Capacity current) const;
  void persist_calibration(const std::string& gpu, const std::string& kind);

  store::Store& store_;
  const Clock& clock_;
  jobs::JobService& jobs_;
  PlacementSettings settings_;
  ledger::Ledger ledger_;

  mutable std::mutex mu_;
  std::vector<cost::Offer> offers_;
  cost::EfficiencyCalibrator calibrator_;
  bool context_dirty_ = true;
  std::shared_ptr<const scheduler::PlacementContext> context_;
  std::function<void(int64_t)> cloud_placed_observer_;
  std::function<void()> pending_observer_;
  std::function<void(double)> decision_observer_;
  std::set<int64_t> pending_;
  uint64_t offers_generation_ = 0;
  // Queued jobs the last pass could not place -> the inputs it decided under (place_rows).
  std::map<int64_t, std::string> unplaceable_inputs_;
  // local_capacity's cache: a worker's pool entry (nullopt: not a local worker).
  std::map<int64_t, std::optional<scheduler::Worker>> worker_pools_;
  // What a lease's placement chose, by job id (see LeaseChoice). Ended leases are dropped by
  // local_capacity.
  std::map<int64_t, LeaseChoice> lease_choices_;
  // observe_heartbeat's cache: what one step of a job is on the worker running it.
  struct HeartbeatShape {
    int64_t worker_id = 0;
    double total_steps = 0;
    double step_flops = 0;
    std::string gpu;
    std::string model_kind;
    cost::Precision precision = cost::Precision::fp32;
    int gpus = 1;
  };
  std::map<int64_t, HeartbeatShape> heartbeat_shapes_;  // by job id
  using OfferMarket = std::tuple<std::string, std::string, bool>;  // instance type, region, spot
  std::map<OfferMarket, int64_t> set_aside_;                     // -> until (ms)
  std::map<int64_t, std::unique_ptr<scheduler::DeadlinePolicy>> policies_;  // per job with a deadline
  std::set<int64_t> deadline_flagged_;
  std::map<int64_t, OpenLease> open_leases_;  // job id -> its local lease being accrued
  int64_t last_reevaluation_ms_ = 0;
  int64_t last_accrual_ms_ = 0;
  size_t last_worker_count_ = 0;
  std::atomic<bool> has_unplaced_{false};  // written by passes, read by tick()
  std::mutex place_mu_;  // one placement pass at a time (capacity is read, then written)
};

// Estimated against actual runtime of a job that ran (GET /v1/jobs/{id} "runtime"): estimated
// hours of the latest placement, actual from the result's elapsed_s or the last start to the end.
// Null when the job has not finished running.
nlohmann::json runtime_json(const store::JobRow& job, const std::vector<store::JobEventRow>& events);

}  // namespace jobctl::daemon::placement
