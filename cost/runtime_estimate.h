// How long a job takes on a GPU (docs/architecture.md "The cost model"):
//
//   hours = training_FLOPs / (gpus * peak_tflops(gpu, precision) * 1e12 * efficiency) / 3600
//
// training_FLOPs come from train::model_stats (6 x parameters x samples x epochs for dense layers,
// the real per-layer count for conv). Efficiency — the fraction of peak a model kind reaches on a
// GPU model — starts from a per-model-kind default (small models leave a GPU mostly idle; BLAS on a
// CPU gets closer to its peak) and is replaced by the calibrated value once workers have reported
// step times (EfficiencyCalibrator). Several GPUs are assumed to scale linearly (data parallel).
//
// Thread safety: pure functions.
#pragma once

#include <string_view>

#include "cost/gpu_specs.h"

namespace jobctl::cost {

// The starting efficiency for a model kind ("mlp", "cnn", anything else) on a device ("cpu" or a
// GPU model).
double default_efficiency(std::string_view gpu_model, std::string_view model_kind);

// Hours of compute; +inf when the throughput is zero.
double estimate_runtime_hours(double training_flops, const GpuSpec& gpu, Precision precision,
                              double efficiency, int gpus = 1);

// The same from an effective throughput already multiplied out (FLOPs per hour for all GPUs),
// which placement precomputes per offer.
inline double runtime_hours_at(double training_flops, double effective_flops_per_hour) {
  return training_flops / effective_flops_per_hour;
}

// Effective FLOPs per hour of `gpus` GPUs at an efficiency.
double effective_flops_per_hour(const GpuSpec& gpu, Precision precision, double efficiency, int gpus = 1);

}  // namespace jobctl::cost
