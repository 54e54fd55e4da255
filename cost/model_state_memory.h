// Memory of a model's state per GPU: weights, gradients and optimizer state, under data-parallel
// sharding (ZeRO, Rajbhandari et al. 2020) and tensor parallelism.
//
// Bytes per parameter (EleutherAI, "Transformer Math 101"):
//   mixed precision (bf16/fp16):  weights 2, gradients 2, optimizer: fp32 master copy 4 +
//                                 AdamW moments 4 + 4 = 12 | SGD momentum 4 = 8 | 8-bit Adam 1 + 1 = 6
//                                 (AdamW: 2 + 2 + 12 = 16 bytes, 112 GB for 7B parameters)
//   fp32:                         weights 4, gradients 4, optimizer: AdamW 8 | SGD 4 | 8-bit Adam 2
// ZeRO with N_d data-parallel GPUs (Rajbhandari et al., section 5, Figure 1): stage 1 shards the
// optimizer state (2+2)Ψ + 12Ψ/N_d, stage 2 the gradients too 2Ψ + 14Ψ/N_d, stage 3 the weights too
// 16Ψ/N_d (7.5B on 64 GPUs: 120, 31.4, 16.6, 1.9 GB). PyTorch FSDP's SHARD_GRAD_OP is stage 2,
// FULL_SHARD stage 3. Tensor parallelism over t GPUs splits every weight matrix t ways: Ψ/t each.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "train/spec/transformer_workload.h"

namespace jobctl::cost {

struct BytesPerParameter {
  int weights = 0;
  int gradients = 0;
  int optimizer = 0;  // the master copy (mixed precision) and the optimizer's moments
  int total() const { return weights + gradients + optimizer; }
};

BytesPerParameter bytes_per_parameter(train::WorkloadPrecision precision, train::WorkloadOptimizer optimizer);

struct ModelStateBytes {
  double weights = 0;  // per GPU
  double gradients = 0;
  double optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
};

// Per GPU, for `parameters` over `tensor_parallel` x `data_parallel` GPUs at a ZeRO stage (0..3).
ModelStateBytes model_state_bytes(double parameters, BytesPerParameter per_parameter, int zero_stage,
                                  int data_parallel, int tensor_parallel = 1);

}  // namespace jobctl::cost
