// The numbers the cost model needs about one job, taken from its spec and train::model_stats:
// how much computing it is, how much GPU memory it needs, and how big its checkpoints are.
// Placement works on these, not on the spec, so that a quote costs no model construction.
//
// Thread safety: plain values and a pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cost/gpu_specs.h"
#include "train/spec/job_spec.h"
#include "train/spec/model_stats.h"

namespace jobctl::cost {

struct Workload {
  std::string model_kind = "mlp";   // "mlp", "cnn": selects the efficiency
  double training_flops = 0;        // whole job
  double parameters = 0;            // the model's (a built-in model's, or estimate.model's); 0: unknown
  int gpus = 1;
  Precision precision = Precision::fp32;  // train.precision: fp32, or bf16 (tensor-core products)
  int64_t vram_bytes_per_gpu = 0;   // estimate_vram(...).total_bytes
  int64_t checkpoint_bytes = 0;     // weights + optimizer state (what a checkpoint writes)
  // A command job (the user's own program) has no model to count. With a runtime hint, its
  // training_flops are the hint's hours at the hinted GPU's rate (so other GPUs scale by speed);
  // without one, `assumed_hours` is the runtime on every GPU (priced per hour).
  std::optional<double> assumed_hours;
  std::string runtime_note;         // how the runtime was estimated, for the reason
  // A command job's estimate.model: its memory per GPU depends on the GPUs it is given (ZeRO
  // shards over them), which placement may choose (vram_bytes_for).
  std::optional<train::TransformerWorkload> transformer;
  // resources.gpus "auto": placement gives the job, per option, the smallest count that holds it
  // (cost/gpu_count_fit.h); `gpus` is then the least it can take (its tensor-parallel degree).
  bool gpus_auto = false;
};

// The GPUs a job takes until placement chooses: resources.gpus, or with "auto" the least it can run
// on (its estimate.model's tensor-parallel degree); placement then gives an "auto" job, per option,
// the smallest count that holds it.
int requested_gpus(const train::JobSpec& spec);

// The memory per GPU of the workload on `gpus` GPUs: the transformer's estimate on that many, or
// vram_bytes_per_gpu (estimated for the spec's GPUs).
int64_t vram_bytes_for(const Workload& w, int gpus);

// The workload's compute on `gpus` GPUs: training_flops, unless a transformer's work is given in
// steps, whose tokens grow with the data-parallel GPUs (scaled from training_flops, which may be
// the part of the job left).
double training_flops_for(const Workload& w, int gpus);

// The model kind of a command job's workload: its own efficiency class, never calibrated from
// (or into) the built-in models'.
inline constexpr const char* kCommandModelKind = "command";
// The model kind of a command job that describes its workload as a transformer (estimate.model):
// its own efficiency class (cost/model_flops_utilisation.h), calibrated from such runs only.
inline constexpr const char* kTransformerModelKind = "transformer";
// The hours assumed for a command job with no runtime estimate.
inline constexpr double kAssumedCommandHours = 1.0;

Workload workload_from_spec(const train::JobSpec& spec, const train::ModelStats& stats);

}  // namespace jobctl::cost
