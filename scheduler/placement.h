// Placement: where a queued job should run, with the money visible (docs/architecture.md "The cost model").
//
// For one job, every candidate is evaluated:
//   - each pool of identical local workers (owned GPUs, priced per GPU the job takes by the
//     inventory under the amortised or marginal policy), with its expected queue wait for that
//     many GPUs;
//   - each Slurm partition (owned GPUs of one model, priced as the local pools), with the queue wait
//     Slurm's own queue gives for that many GPUs (LocalCapacity::partitions());
//   - each cloud offer on-demand, and on spot where the offer has a spot price (expected time with
//     the interruption-risk and checkpoint terms: T_spot = T (1 + C/tau + lambda (tau/2 + R)),
//     lambda from cost/interruption_rates.h for the offer's cloud, region and instance type).
//     A gang of N nodes takes N instances of the offer: N times the price and the GPUs, and on
//     spot N lambda, since an interruption of any one instance stops the whole gang.
// Candidates are rejected, with the reason recorded, by: placement mode (auto/local/cloud), the
// job's GPU constraint ("any" GPU, "cpu" = anything, or the variants a model name names), spot mode (never/always),
// too few GPUs, a GPU without known specs, memory (the VRAM estimate must fit each GPU), and the
// job's maximum $/h. For the rest: expected running hours, cost, and completion time (queue wait
// or provisioning + running) against the time left to the deadline.
//
// The rule: the cheapest candidate that meets the deadline wins (ties: the earlier finish). With no
// deadline every fitting candidate meets it. If none meets it, the earliest-finishing candidate
// within the price cap wins (ties: the cheaper), and the reason says the deadline will be missed.
// "any" takes a GPU when one fits, else a CPU. A job never waits for a busy local pool while a
// fitting local worker is idle, unless it has a deadline, waiting is cheaper and the busy pool
// frees in time (the reason says which). If nothing fits, the job is unplaceable and the reason
// counts the rejections.
//
// Speed: a PlacementContext is built once per catalog / inventory / calibration change and holds
// every per-offer figure precomputed (throughput per model kind and precision, prices, memory,
// interruption rate), so one decision is a tight loop over plain arrays with no allocation unless
// a candidate table is asked for. place() does not change the capacity: the caller applies the
// decision (LocalCapacity::acquire for run_local), so a quote is exactly the placement that would
// be made.
//
// Thread safety: PlacementContext is immutable after construction and may be shared by threads;
// place() is a pure function of its arguments.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "cost/efficiency_calibrator.h"
#include "cost/interruption_rates.h"
#include "cost/local_gpu.h"
#include "cost/price_catalog.h"
#include "scheduler/job.h"
#include "scheduler/local_capacity.h"
#include "scheduler/option_kind.h"

namespace jobctl::scheduler {

// Model kinds with an efficiency of their own: "mlp", "cnn", other (command jobs), "transformer".
inline constexpr size_t kModelKindCount = 4;

enum class Rejection : uint8_t {
  none,
  placement_mode,   // local job and a cloud option, or the reverse
  gpu_constraint,   // not the GPU model the job asks for
  spot_mode,        // spot never / always
  no_spot_market,   // the offer has no spot price
  too_few_gpus,
  unknown_gpu,      // no specs: its runtime cannot be estimated
  memory,           // the VRAM estimate does not fit one GPU
  price_cap,        // above max_usd_per_hour
  no_provider,      // a cloud offer, and no cloud provider is configured to launch it; a Slurm
                    // partition, and nothing submits Slurm jobs
  no_commands,      // a command job, and nothing there runs command jobs
  no_containers,    // a job in an image, and nothing there runs containers or allows its mounts
  too_few_machines, // a gang of more nodes than the option has machines (a local pool's workers,
                    // cloud.max_instances instances of a cloud offer; a Slurm partition runs one
                    // machine per job here)
};
inline constexpr size_t kRejectionCount = 13;
std::string_view to_string(Rejection r);

struct PlacementConfig {
  cost::LocalPricing local_pricing = cost::LocalPricing::amortised;
  double provision_hours = 0.05;              // a cloud instance boots and its worker registers
  double warmup_hours = 0.01;                 // process start, data load, first step
  double checkpoint_write_bytes_per_second = 200e6;
  double checkpoint_fixed_seconds = 2.0;      // fsync, rename, upload handshake
  double checkpoint_fetch_bytes_per_second = 100e6;
  // lambda per offer (cloud, region, instance type): configured rates, else the real traces'.
  cost::InterruptionRates interruption_rates;
  // A configured default for every offer: beats the traces, not a more specific configured rate.
  std::optional<double> spot_interruptions_per_hour;
  // Local GPU models with no inventory entry are priced at their board power only.
  double default_electricity_usd_per_kwh = 0.15;
  // False when nothing can launch a cloud instance (the daemon without a cloud provider): cloud
  // offers are still evaluated and shown, but rejected with no_provider.
  bool cloud_launchable = true;
  // False when nothing submits Slurm jobs for placement (no slurm section): partitions are
  // evaluated and shown (with their queue wait), but rejected with no_provider.
  bool slurm_launchable = false;
  // Whether the cloud instances jobctld launches can run a command job (the provider starts their
  // worker dedicated to that job, with command jobs allowed); false: command jobs are rejected
  // there with no_commands. Slurm batch jobs always can (their worker runs the one job).
  bool cloud_runs_commands = true;
  // Whether the workers jobctld starts (cloud instances, Slurm batch jobs) run jobs in an image,
  // and which host folders they let them mount (cloud.containers / slurm.containers and their
  // allowed_mounts: the worker command is then given --container-runtime and --allow-mount).
  ContainerSupport cloud_containers;
  ContainerSupport slurm_containers;
  // How many instances of one offer a gang may take at once (cloud.max_instances): a gang of N
  // nodes on a cloud offer is N instances of it, launched together in the priced zone.
  int cloud_max_instances = 16;
  // CPU machines by their device key (cost/cpu_peak.h, "cpu/AMD EPYC/2") and their peak FP32
  // TFLOPS: a local pool of that name is timed at that peak (and calibrated under that key),
  // not at the generic "cpu" row's.
  std::map<std::string, double> cpu_peak_tflops;
  // GPUs of local machines that jobctl's GPU table does not know, by device name, with their
  // memory per GPU (GB): a local pool of that name is timed at cost::unknown_gpu_spec's
  // conservative figures instead of being rejected as unknown_gpu.
  std::map<std::string, double> unknown_gpu_memory_gb;
};

struct Candidate;
struct PlacementDecision;
class PlacementContext;
PlacementDecision place(const Job& job, const PlacementContext& ctx, const LocalCapacity& capacity,
                        int64_t now_ms, std::vector<Candidate>* table);

class PlacementContext {
 public:
  PlacementContext(std::vector<cost::Offer> offers, std::vector<cost::LocalGpuInventory> inventory,
                   const cost::EfficiencyCalibrator& calibration, PlacementConfig config = {});
  // Not copyable: specs_ points into cpu_specs_, whose names point into cpu_names_.
  PlacementContext(const PlacementContext&) = delete;
  PlacementContext& operator=(const PlacementContext&) = delete;

  const std::vector<cost::Offer>& offers() const { return offers_; }
  const PlacementConfig& config() const { return config_; }
  // What one GPU-hour of an owned GPU model costs under the configured policy.
  double local_usd_per_gpu_hour(std::string_view gpu_model) const;
  double interruptions_per_hour(size_t offer) const { return lambdas_[offer_lambda_[offer]]; }
  // Checkpoint write time C and restart time R (hours) for a job's checkpoint size.
  double checkpoint_hours(int64_t checkpoint_bytes) const;
  double restart_hours(int64_t checkpoint_bytes) const;

  // Internal, for place(): a dense id per GPU model seen in offers, inventory or pools.
  int model_id(std::string_view canonical) const;
  // The same for a device name in any spelling (cost::identify_gpu, with its memory per GPU).
  int device_model_id(std::string_view name, double memory_gb = 0) const;
  double flops_per_hour(int model, int kind, int precision) const {
    return rates_[static_cast<size_t>(model)][static_cast<size_t>(kind)][static_cast<size_t>(precision)];
  }
  // What a run spends outside its steps on this device (start-up, evaluation, checkpoints), as
  // calibration learned it from finished runs (cost/efficiency_calibrator.h); 0 before any. Hours.
  double run_overhead_hours(int model, int kind) const {
    return overhead_hours_[static_cast<size_t>(model)][static_cast<size_t>(kind)];
  }
  // The specs of a model id; nullptr when none are known.
  const cost::GpuSpec* gpu_spec(int model) const { return specs_[static_cast<size_t>(model)]; }

 private:
  friend PlacementDecision place(const Job&, const PlacementContext&, const LocalCapacity&, int64_t,
                                 std::vector<Candidate>*);
  struct OfferFigures {
    int32_t model = -1;
    int32_t gpu_count = 0;
    double memory_bytes = 0;       // per GPU
    double on_demand = 0;
    double spot = -1;              // < 0: no spot market
    uint32_t lambda_index = 0;
  };
  int intern_model(const std::string& canonical, const cost::EfficiencyCalibrator& cal);
  // Lookups by string_view without building a std::string.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::vector<cost::Offer> offers_;
  PlacementConfig config_;
  std::vector<OfferFigures> figures_;
  std::vector<uint32_t> offer_lambda_;
  std::vector<double> lambdas_;
  std::unordered_map<std::string, int, NameHash, std::equal_to<>> model_ids_;
  int cpu_model_ = -1;
  std::vector<std::string> models_;
  std::vector<const cost::GpuSpec*> specs_;  // [model]; nullptr: no specs
  // The specs of the CPU machines of config.cpu_peak_tflops (the "cpu" row at their own peak) and
  // of the unknown GPUs of config.unknown_gpu_memory_gb, and their names, which the specs'
  // string_views point into (deques: stable addresses).
  std::deque<std::string> cpu_names_;
  std::deque<cost::GpuSpec> cpu_specs_;
  std::vector<std::array<std::array<double, 4>, kModelKindCount>> rates_;  // [model][kind][precision], one GPU
  std::vector<std::array<double, kModelKindCount>> overhead_hours_;          // [model][kind]
  std::vector<double> local_price_;                           // [model] $/GPU-hour, < 0: not set
  std::vector<cost::LocalGpuInventory> inventory_;
};

struct Candidate {
  OptionKind kind = OptionKind::local;
  uint32_t source = 0;            // offer index (cloud), pool index (local), partition index (slurm)
  Rejection rejection = Rejection::none;
  bool meets_deadline = false;
  bool chosen = false;
  double usd_per_hour = 0;
  double queue_wait_hours = 0;    // local: until a worker of the pool frees; cloud: provisioning;
                                  // slurm: the partition's queue
  double estimated_hours = 0;     // running time (spot: expected, interruptions included)
  double estimated_cost_usd = 0;  // what the run is billed (cloud: provisioning included)
  double completion_hours = 0;    // from now: queue wait + running
  int gpus = 0;                   // GPUs the job takes there (resources.gpus, or with "auto" the
                                  // smallest count that holds it)
  int64_t vram_bytes_per_gpu = 0; // the job's memory per GPU on that many
};

// wait_spot is never place()'s answer: the daemon's spot deadline policy, asked over place()'s
// choice, may hold a job with a deadline back until spot capacity returns (docs/cost-model.md,
// "Spot and deadlines at runtime"), and the placement document then says so.
enum class Outcome : uint8_t {
  run_local,
  wait_local,
  launch_on_demand,
  launch_spot,
  launch_slurm,
  wait_spot,
  unplaceable,
};
std::string_view to_string(Outcome o);

enum class ReasonCode : uint8_t {
  cheapest_no_deadline,
  cheapest_meeting_deadline,
  earliest_missing_deadline,
  nothing_fits,
};
std::string_view to_string(ReasonCode r);

struct PlacementDecision {
  Outcome outcome = Outcome::unplaceable;
  ReasonCode reason_code = ReasonCode::nothing_fits;
  Candidate choice;                        // valid unless unplaceable
  int32_t chosen_row = -1;                 // index in the candidate table, when one was asked for
  std::optional<double> deadline_left_hours;  // time left to the deadline at decision time
  uint32_t considered = 0;
  uint32_t fitting = 0;
  uint32_t meeting_deadline = 0;
  std::array<uint32_t, kRejectionCount> rejected{};  // candidates rejected, by reason
  double fastest_completion_hours = 0;     // among fitting candidates
  // The idle-worker rule: when the cheapest choice waits for a busy local pool while a fitting
  // local worker is idle, the idle one is taken — unless the job has a deadline, waiting is
  // cheaper, and the busy pool frees in time for it. Set when the rule applied: the option passed
  // over (the waiting one when the idle one was taken; the idle one when the job waits).
  std::optional<Candidate> idle_alternative;
  bool waits_over_idle = false;
  // "gpu: any" prefers a GPU whenever one fits: set when a GPU option was chosen over a CPU option
  // that costs less (the cheapest CPU option meeting the deadline), so that the reason says so.
  std::optional<Candidate> cheaper_cpu;
};

// Decides for one job at now_ms. When `table` is given it is cleared and receives every candidate
// (rejected ones too), in evaluation order: local pools, Slurm partitions, then per offer on-demand
// and spot.
PlacementDecision place(const Job& job, const PlacementContext& ctx, const LocalCapacity& capacity,
                        int64_t now_ms, std::vector<Candidate>* table = nullptr);

// The same at the clock's now.
inline PlacementDecision place(const Job& job, const PlacementContext& ctx, const LocalCapacity& capacity,
                               const Clock& clock, std::vector<Candidate>* table = nullptr) {
  return place(job, ctx, capacity, clock.now_ms(), table);
}

// What decides which options reject `job` (and so whether place() finds it unplaceable) under a
// given context and capacity, as a key: jobs with equal keys get the same rejections from every
// candidate. The size of the work, the deadline, the priority and the submission time change
// only prices and times, never a rejection. The daemon groups queued jobs nothing can run by this
// key, so that a change of workers or offers is tried on one job of each group, not on all of them.
// The key is made of exactly the job's inputs that place()'s rejection rules read
// (tests/scheduler/placement_test.cpp holds it).
std::string rejection_key(const Job& job);

// A deadline policy's "wait for spot" over a decision place() took while no spot offer could be
// launched: the job is held back (Outcome::wait_spot), nothing in `table` stays chosen, and the
// decision keeps the option it would otherwise have taken (its choice) for the reason's words.
void hold_for_spot(PlacementDecision& d, std::vector<Candidate>* table);

// The index of the model kind ("mlp" 0, "cnn" 1, "transformer" 3, anything else 2) used by
// flops_per_hour.
int model_kind_index(std::string_view kind);

// Words for people: the option ("spot aws:p3.2xlarge us-east-1/use1-az1", "local V100 x1", "local
// H100-SXM x1 (8-GPU machine)": the GPUs the job takes, then the machine's when they differ), why a
// candidate was rejected ("needs 18.2 GiB per GPU; has 16.0"), and why the decision was taken.
std::string option_label(const Candidate& c, const PlacementContext& ctx, const LocalCapacity& capacity);
std::string gpu_label(const Candidate& c, const PlacementContext& ctx, const LocalCapacity& capacity);
// The GPUs of the machine a candidate names: a local machine's, a Slurm node's, a cloud instance's.
int machine_gpus(const Candidate& c, const PlacementContext& ctx, const LocalCapacity& capacity);
std::string rejection_text(const Candidate& c, const Job& job, const PlacementContext& ctx,
                           const LocalCapacity& capacity);
std::string decision_reason(const PlacementDecision& d, const Job& job, const PlacementContext& ctx,
                            const LocalCapacity& capacity);

}  // namespace jobctl::scheduler
