// The fleet plan: how many GPUs of one model a team should own, answered from the jobs it really
// ran (docs/cost-model.md, "The fleet plan"). `jobctl report plan` and GET /v1/reports/plan.
//
// The daemon gathers the history (daemon/placement/fleet_plan_history.h): every job of the model
// that arrived in the period, with its arrival, GPUs, runtime, deadline, where it ran and what the
// ledger billed. plan_fleet() replays those arrivals in time order against today's owned GPUs of
// the model plus N bought ones (N = 0..K), each job placed by the placement rule
// (scheduler/placement.h, applied here to the two options a replayed job has: place() needs the
// job's spec and live capacity, which a history no longer has): the cheapest option that meets
// its deadline, where the options are
//   - owned: the k GPUs that free first (a queue wait when none is free), at the owned price;
//   - cloud: at once, at the job's cloud price per GPU-hour (what it paid when it ran in the
//     cloud; else the cheapest on-demand offer of the model);
// and when none meets the deadline the earliest to finish (a deadline missed). A job with no
// deadline waits for an owned GPU at most `max_wait_hours` (placement would wait indefinitely,
// which no plan can price: the queue of an undersized fleet grows without end).
//
// The cost of each N over the period:
//   today's fleet  the busy GPU-hours of today's owned GPUs at the price the ledger bills them;
//   bought GPUs    their purchase (+ setup) amortised over the lifetime by calendar time — idle
//                  hours cost the same as busy ones — plus maintenance by calendar time, plus
//                  power (cost/local_gpu.h energy_per_hour) for their busy hours;
//   cloud          the GPU-hours still placed in the cloud at each job's cloud price;
//   other          ledger spend the replay does not move (idle instances, other models): the same
//                  for every N.
// So N = 0 re-prices the real history the way the ledger billed it. The cheapest N is named with
// its saving against N = 0 and the payback months of its purchase:
//   payback = N (purchase + setup) / (monthly saving before the purchase), the monthly saving
//   being (cost(0) - (cost(N) - amortised purchase(N))) / months in the period.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/expected.h"
#include "cost/local_gpu.h"

namespace jobctl::cost {

// The shortest history a plan is made from: a fleet is bought for years, and a plan from a few
// days extrapolates a burst.
inline constexpr double kMinPlanHistoryHours = 7 * 24.0;
inline constexpr int kMaxPlanExtraGpus = 256;

struct PlanJob {
  int64_t id = 0;
  int64_t arrival_ms = 0;
  int gpus = 1;
  double runtime_hours = 0;               // on this GPU model
  std::optional<int64_t> deadline_ms;     // absent: no deadline
  bool ran_owned = false;                 // where it really ran
  double paid_usd = 0;                    // what the ledger billed for it
  double cloud_usd_per_gpu_hour = 0;      // its cloud option in the replay
};

struct FleetPlanInput {
  std::string gpu_model;
  int64_t from_ms = 0;
  int64_t to_ms = 0;                      // exclusive
  std::vector<PlanJob> jobs;              // any order
  int owned_gpus_today = 0;
  double owned_usd_per_gpu_hour_today = 0;  // as the ledger bills today's owned GPUs
  // The GPU that would be bought: purchase_usd, setup_usd, lifetime_years, power_kw, pue,
  // electricity_usd_per_kwh, maintenance_usd_per_year (count and utilisation are not used: the
  // replay measures utilisation).
  LocalGpuInventory bought;
  int max_extra_gpus = 8;                 // K
  double max_wait_hours = 1.0;            // for jobs with no deadline
  double other_usd = 0;                   // ledger spend the replay does not move
  double ledger_usd = 0;                  // the ledger's real total for the period (for comparison)
};

struct FleetPlanRow {
  int extra_gpus = 0;                     // N
  int owned_gpus = 0;                     // today's + N
  double total_usd = 0;
  double fleet_usd = 0;                   // today's owned GPUs, as the ledger bills them
  double purchase_usd = 0;                // N GPUs' purchase + setup, amortised over the period
  double maintenance_usd = 0;
  double power_usd = 0;
  double cloud_usd = 0;
  double other_usd = 0;
  double owned_gpu_hours = 0;             // busy GPU-hours on owned GPUs
  double cloud_gpu_hours = 0;
  double utilisation = 0;                 // owned busy GPU-hours / (owned GPUs x period hours)
  int jobs_owned = 0;
  int jobs_cloud = 0;
  int jobs_waited = 0;                    // started on an owned GPU after a queue wait
  double wait_hours_total = 0;
  double wait_hours_max = 0;
  int deadlines_missed = 0;
};

struct FleetPlan {
  FleetPlanInput input;                   // the assumptions, echoed
  double period_hours = 0;
  int job_count = 0;                          // input.jobs.size() (a plan read back from JSON has no jobs)
  double demand_gpu_hours = 0;
  std::vector<double> demand_by_hour_of_day;  // 24 buckets, GPU-hours (UTC), as submitted
  std::vector<double> demand_by_day;          // one per day of the period, GPU-hours
  double peak_concurrent_gpus = 0;            // demand as submitted, all jobs started on arrival
  std::vector<FleetPlanRow> rows;             // N = 0..K
  int cheapest_extra_gpus = 0;
  double saving_usd = 0;                      // cost(0) - cost(cheapest), over the period
  double saving_usd_per_month = 0;
  std::optional<double> payback_months;       // absent when the cheapest is N = 0
  double replay_vs_ledger = 0;                // cost(0) / ledger_usd - 1 (0 when no ledger total)
};

// No jobs is a plan (no demand: the cheapest is to buy none; job_count 0 says so).
// Errors (invalid_argument, naming the field): a too-short history ("from"),
// to <= from ("to"), K out of 0..256 ("max_extra_gpus"), max_wait_hours < 0, an owned price
// < 0, a bought-GPU figure out of range (as cost/local_gpu.h validate() names it), a job with a
// non-positive runtime or GPU count ("jobs").
[[nodiscard]] Expected<FleetPlan> plan_fleet(const FleetPlanInput& input);

// The most GPUs the jobs ask for at once, as submitted (every job started on arrival): the
// service's default K starts from it.
double peak_concurrent_gpus(const std::vector<PlanJob>& jobs);

// One replay, for a fixed number of bought GPUs.
FleetPlanRow replay_fleet(const FleetPlanInput& input, int extra_gpus);

nlohmann::json to_json(const FleetPlan& plan);
[[nodiscard]] Expected<FleetPlan> fleet_plan_from_json(const nlohmann::json& j);
// One row per N, the headline figures repeated on every row.
std::string fleet_plan_csv(const FleetPlan& plan);
// The assumptions in one paragraph for people.
std::string fleet_plan_assumptions(const FleetPlan& plan);

}  // namespace jobctl::cost
