// A command job's workload as a transformer (`estimate.model` in the job spec, docs/job-spec.md):
// enough of its shape and training set-up for the cost model to estimate its memory per GPU and
// its compute (cost/transformer_estimate.h) before it runs. The user's program is not read; this
// is what the user says it does.
//
// The shape is layers, hidden, heads and vocabulary; `parameters`, when given, replaces the count
// the shape implies (a model whose blocks differ from GPT's, e.g. Llama's gated MLP), while
// layers, hidden and heads still size the activations. The work is `tokens` to train, or `steps`
// optimizer steps of micro_batch x seq_len x accumulate_steps tokens per data-parallel GPU.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <string_view>

namespace jobctl::train {

// The number format of training: fp32 throughout, or mixed precision (16-bit weights, gradients
// and activations; fp32 master weights and optimizer state).
enum class WorkloadPrecision { fp32, bf16, fp16 };
// The optimizer: AdamW (two fp32 moments), SGD with momentum (one), Adam with 8-bit moments
// (bitsandbytes: one byte each).
enum class WorkloadOptimizer { adamw, sgd, adam8bit };
// Activation recomputation (Korthikanti et al.): none; selective (the attention scores, softmax
// and its dropout are recomputed, the rest kept); full (only each layer's input kept).
enum class Recompute { none, selective, full };

struct TransformerWorkload {
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int vocab = 0;                // 0 only with `parameters`: no vocabulary terms
  int64_t parameters = 0;       // 0: from the shape
  int seq_len = 2048;
  int micro_batch = 1;          // sequences per GPU per forward pass
  int accumulate_steps = 1;     // micro-batches per optimizer step
  int64_t tokens = 0;           // tokens to train; 0: from steps
  int64_t steps = 0;            // optimizer steps; 0: from tokens
  WorkloadPrecision precision = WorkloadPrecision::bf16;
  WorkloadOptimizer optimizer = WorkloadOptimizer::adamw;
  Recompute recompute = Recompute::none;
  int zero_stage = 0;           // ZeRO / FSDP sharding over the data-parallel GPUs: 0..3
  int tensor_parallel = 1;      // GPUs one layer is split over (divides heads and resources.gpus)
};

bool operator==(const TransformerWorkload&, const TransformerWorkload&);

std::string_view to_string(WorkloadPrecision);
std::string_view to_string(WorkloadOptimizer);
std::string_view to_string(Recompute);

}  // namespace jobctl::train
