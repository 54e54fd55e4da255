// A transformer workload's parameters, compute and memory per GPU (docs/cost-model.md,
// "Transformers"), from its description in the spec (train/spec/transformer_workload.h).
//
//   parameters  the spec's `parameters`, else from the shape: 12·L·h² + 13·L·h per layer stack
//               (attention 4h² + 4h, MLP 8h² + 5h, two LayerNorms 4h) + V·h token embedding +
//               s·h learned positions + 2h final LayerNorm + V·h output projection (not tied)
//   tokens      the spec's `tokens`, else steps x micro_batch x seq_len x accumulate_steps x the
//               data-parallel GPUs (resources.gpus / tensor_parallel)
//   compute     6·P·D FLOPs (forward 2PD, backward 4PD; EleutherAI "Transformer Math 101",
//               Kaplan et al. 2020); 8·P·D with full recomputation (a second forward pass).
//               Selective recomputation redoes only the attention scores: counted as 6·P·D (its
//               overhead is a few percent, Korthikanti et al. Table 4).
//   memory      per GPU: model state (cost/model_state_memory.h) + one micro-batch's activations
//               (cost/activation_memory.h) + the loss's peak beyond them (the gradients of
//               the fp32 logits, 8·s·b·v) + the allowance of cost/vram_estimate.h: 640 MiB for
//               the CUDA context, cuBLAS/NCCL workspaces and allocator slack, plus 10% of the rest
//               for the caching allocator's fragmentation. Not counted: ZeRO-3's gathered weights
//               of the layer in flight and communication buffers (inside the 10% for layers
//               small against the model).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "cost/gpu_specs.h"
#include "cost/model_state_memory.h"
#include "train/spec/transformer_workload.h"

namespace jobctl::cost {

struct TransformerEstimate {
  double parameters = 0;
  double tokens = 0;
  double training_flops = 0;
  int gpus = 1;
  int data_parallel = 1;           // gpus / tensor_parallel
  ModelStateBytes model_state;     // per GPU
  double activation_bytes = 0;     // per GPU: kept for backward
  double loss_peak_bytes = 0;      // per GPU: the loss's gradients at the start of backward
  double allowance_bytes = 0;      // per GPU
  double total_bytes = 0;          // per GPU
};

// Parameters a shape implies (see the header comment).
double transformer_parameters(const train::TransformerWorkload& m);

// The estimate for the workload on `gpus` GPUs (at least its tensor_parallel; the data-parallel
// degree is gpus / tensor_parallel, rounded down, at least 1).
TransformerEstimate estimate_transformer(const train::TransformerWorkload& m, int gpus);

// A job spec's estimate.model (JSON text). Errors: as estimate_transformer_spec.
[[nodiscard]] Expected<train::TransformerWorkload> transformer_workload_of_spec(std::string_view spec_json);

// The estimate of a job spec's estimate.model (JSON text) on `gpus` GPUs (0: its resources.gpus).
// Errors: the spec's own (the field named), or invalid_argument on "estimate.model" when the spec
// does not describe its workload.
[[nodiscard]] Expected<TransformerEstimate> estimate_transformer_spec(std::string_view spec_json, int gpus = 0);

// How the workload is spread over `gpus` GPUs, for messages: "on 1 GPU", "with ZeRO-2 on 2 GPUs",
// "with tensor parallel 2 on 4 GPUs".
std::string parallelism_text(const train::TransformerWorkload& m, int gpus);

// The precision whose peak the workload's products run at.
Precision compute_precision(train::WorkloadPrecision p);

}  // namespace jobctl::cost
