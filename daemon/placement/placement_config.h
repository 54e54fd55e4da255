// jobctld's placement and cost configuration (docs/configuration.md, sections "cost" and
// "placement"): the owned GPU inventory and its pricing policy, where the price catalog comes
// from, which cloud provider launches cloud offers, and the placement cadence.
//
//   "cost": {"pricing": "amortised" | "marginal",
//            "local_gpus": [{"gpu_model": "V100", "count": 4, "purchase_usd": 2000, ...}, ...],
//            "seed_catalog": true,
//            "catalog_files": ["/path/aws_gpu_vms.csv", {"path": "...", "cloud": "gcp"}],
//            "default_electricity_usd_per_kwh": 0.15}
//   "placement": {"enabled": true, "cloud_provider": "" | "sim" | "exec", "clouds": ["aws"],
//                 "provision_hours": 0.05, "warmup_hours": 0.01, "checkpoint_fixed_seconds": 2,
//                 "spot_interruptions_per_hour": 0.3,   (default: each offer's trace rate)
//                 "reevaluate_s": 10, "max_reservations": 16, "deadline_policy": "up", "max_price_jump": 3,
//                 "fair_share": {"enabled": true, "half_life_days": 7, "default_share": 1,
//                                "shares": {"alice": 2}, "recompute_s": 10, "max_age_days": 7,
//                                "weights": {"priority": 10000, "fair_share": 1000, "age": 100, "size": 0}}}
//
// Thread safety: plain values and pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/expected.h"
#include "cost/local_gpu.h"
#include "cost/price_catalog.h"
#include "scheduler/fair_share.h"
#include "scheduler/worker.h"
#include "scheduler/placement.h"
#include "scheduler/price_jump.h"
#include "scheduler/start_plan.h"

namespace jobctl::daemon::placement {

struct CatalogFile {
  std::string path;
  std::string cloud;  // empty: from the file name ("aws_gpu_vms.csv" -> "aws")
};

struct PlacementSettings {
  // cost
  cost::LocalPricing pricing = cost::LocalPricing::amortised;
  std::vector<cost::LocalGpuInventory> local_gpus;
  bool seed_catalog = true;
  std::vector<CatalogFile> catalog_files;
  double default_electricity_usd_per_kwh = 0.15;
  // placement
  bool enabled = true;                 // false: no placement, any fitting worker (FIFO)
  std::string cloud_provider;          // "" = none: cloud offers are quoted but never chosen
  std::vector<std::string> clouds;     // only offers of these clouds (empty: all)
  bool slurm_launchable = false;       // a "slurm" section is configured: jobctld submits the
                                       // batch jobs of jobs placed on its partitions
  bool cloud_runs_commands = true;     // the instances jobctld launches can run command jobs (the
                                       // provider starts their worker for the job: {job_flags})
  scheduler::ContainerSupport cloud_containers;  // cloud.containers, cloud.allowed_mounts
  scheduler::ContainerSupport slurm_containers;  // slurm.containers, slurm.allowed_mounts
  int cloud_max_instances = 16;        // cloud.max_instances: the most instances of one offer a
                                       // gang may take
  double provision_hours = 0.05;
  // What a restart and a checkpoint cost besides their bytes (scheduler::PlacementConfig): the
  // spot time model's C and R, and the price of a move.
  double warmup_hours = 0.01;
  double checkpoint_fixed_seconds = 2.0;
  // One rate for every spot offer; unset: each offer's own rate from the real traces
  // (cost/interruption_rates.h).
  std::optional<double> spot_interruptions_per_hour;
  int reevaluate_s = 10;               // queued re-placement, deadline checks
  // The most jobs waiting for owned machines that one plan reserves GPUs for (reservation_pass.h;
  // Slurm's bf_max_job_test): behind the last, a job that cannot start now waits unplanned.
  int max_reservations = scheduler::kDefaultMaxReservations;
  std::string deadline_policy = "up";  // scheduler::make_deadline_policy name
  // While cheaper offers cool down after failed launches, a job waits for them rather than pay
  // more than this many times their price (scheduler/price_jump.h); 0: no bound.
  double max_price_jump = scheduler::kDefaultMaxPriceJump;
  // Fair share between users (scheduler/fair_share.h, docs/cost-model.md "Fair share"): the order
  // the start plan takes its waiting jobs in. Unset `enabled`: on exactly when auth is on.
  struct FairShare {
    std::optional<bool> enabled;
    double half_life_days = 7;              // Slurm's PriorityDecayHalfLife
    scheduler::FairShareWeights weights{};  // max_age_ms from "max_age_days"
    std::map<std::string, double> shares;   // per user; absent: default_share
    double default_share = 1;
    int recompute_s = 10;                   // usage read from the ledger at most this often
  } fair_share;
  // Moves for savings (savings_moves.h): a running cloud job moves to an idle owned worker when
  // that saves more than move_margin x what the move costs; at most max_moves_per_hour per job
  // (0: never for savings).
  double move_margin = 1.5;
  int max_moves_per_hour = 2;
  // Filled by the daemon at start: the folder `jobctl catalog update` writes (<data_dir>/catalog).
  std::string catalog_dir;
};

// Applies the "cost" and "placement" objects of the configuration document (either may be
// absent). Unknown keys and wrong types are errors naming the key ("cost.local_gpus[0].count").
Status apply_placement_config(const nlohmann::json& document, PlacementSettings& settings);
Status validate(const PlacementSettings& settings);

// The scheduler's configuration for these settings.
scheduler::PlacementConfig placement_config(const PlacementSettings& settings);

// The offers: the seed catalog (when enabled), every configured file, and every *.csv in
// catalog_dir (cloud from the file name), filtered by `clouds`. Errors name the file.
// `warnings` receives skipped rows.
Expected<std::vector<cost::Offer>> load_offers(const PlacementSettings& settings,
                                               std::vector<std::string>* warnings = nullptr);

}  // namespace jobctl::daemon::placement
