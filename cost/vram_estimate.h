// How much GPU memory a training run needs (docs/architecture.md "The cost model"): a job never goes to a
// GPU it does not fit.
//
//   weights (fp32; train.precision bf16 adds their bf16 copy) + gradients (fp32) + optimizer state
//   (AdamW: 2 copies of the weights, SGD: 1)
//   + activations per sample x samples per micro-batch (the batch split over the GPUs, rounded
//     up, then over train.accumulate_steps, rounded up; bf16 activations where train.precision is
//     bf16; with train.recompute only what activation_plan.h keeps), + 4 bytes per sample of the
//     per-GPU batch (its losses)
//   + data: the training and test sets, which the trainer keeps on the device, its evaluation
//     buffers and per-epoch loss log
//   + workspace allowance: 640 MiB for the CUDA context, cuBLAS workspace and allocator slack,
//     plus 10% of everything above for fragmentation.
// The fixed part is measured: on an H200 (CUDA 13, driver 580) a jobctl-train process held
// 114-121 MB more than the model's own memory and 512 MiB predicted, about 624 MiB in all
// (bench/RESULTS.md, "CUDA path on a GPU"); 640 MiB keeps a little slack. It errs on the side of
// not placing a job that might not fit.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>

#include "train/spec/model_stats.h"

namespace jobctl::cost {

inline constexpr int64_t kWorkspaceFixedBytes = 640LL << 20;
inline constexpr double kWorkspaceFraction = 0.10;

struct VramEstimate {
  int64_t weight_bytes = 0;        // fp32 weights and, for bf16 jobs, their bf16 copy
  int64_t gradient_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t activation_bytes = 0;
  int64_t data_bytes = 0;
  int64_t workspace_bytes = 0;
  int64_t total_bytes = 0;         // per GPU
  double total_gb() const { return static_cast<double>(total_bytes) / 1e9; }
};

VramEstimate estimate_vram(const train::ModelStats& stats, int batch_size, int gpus = 1);

}  // namespace jobctl::cost
