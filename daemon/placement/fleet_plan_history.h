// The fleet plan from jobctld's own history (GET /v1/reports/plan, `jobctl report plan`): gathers
// the jobs of one GPU model that arrived in the period from the job rows and the ledger, today's
// owned GPUs of the model from the registered workers and the ledger, and the cloud prices from
// the catalog, then replays them (cost/fleet_plan.h).
//
// What each job contributes (docs/cost-model.md, "The fleet plan"):
//   model      the GPU its placement chose (the job row's chosen option), else resources.gpu;
//   gpus       resources.gpus;
//   runtime    the wall time of its ledger segments (daemon/ledger/job_segments.h), on that model;
//   deadline   submitted + placement.deadline_hours, when the spec has one;
//   where      owned when most of its time was on an owned machine;
//   cloud      the $/GPU-hour its cloud segments were billed, else the cheapest on-demand catalog
//              offer of the model with enough GPUs (per GPU of the job), else the ledger's
//              on-demand reference for its rows.
// Today's owned GPUs of the model: the most of the registered owned workers' GPUs of the model
// and the distinct owned GPUs of the model the ledger billed in the period, at the mean price
// the ledger billed them (else cost.local_gpus's price under cost.pricing, else board power at
// the default electricity price). Ledger spend in the period of no replayed job (idle
// instances, other models, jobs that arrived before it) is `other_usd`, clipped to the period.
//
// Thread safety: a function over the store (safe from any thread, as the store's readers).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "base/expected.h"
#include "cost/fleet_plan.h"
#include "cost/price_catalog.h"
#include "daemon/placement/placement_config.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::placement {

struct FleetPlanRequest {
  int64_t from_ms = 0;
  int64_t to_ms = std::numeric_limits<int64_t>::max();  // clipped to now
  std::string gpu;                        // empty: the model with the most GPU-hours of demand
  // The GPU that would be bought; absent: the cost.local_gpus entry of the model, else the
  // defaults (power: the GPU's board power; $0.15/kWh; 4 years; utilisation 0.5; PUE 1).
  // purchase_usd is required unless cost.local_gpus states it.
  std::optional<double> purchase_usd, setup_usd, lifetime_years, power_kw, pue, electricity_usd_per_kwh,
      maintenance_usd_per_year, utilisation;
  std::optional<int> max_extra_gpus;      // K; absent: max(4, peak concurrent GPUs + 1), at most 256
  double max_wait_hours = 1.0;
};

// Errors: invalid_argument naming the request field ("to", "gpu", "purchase_usd", "from" for an
// empty or too short history, ...), or the store's.
Expected<cost::FleetPlan> fleet_plan(store::Store& store, const PlacementSettings& settings,
                                     const std::vector<cost::Offer>& offers, const FleetPlanRequest& request,
                                     int64_t now_ms);

}  // namespace jobctl::daemon::placement
