// The transformer estimates against the figures their sources publish (docs/cost-model.md,
// "Transformers"), each to the precision the source gives it.
#include <cmath>

#include <gtest/gtest.h>

#include "cost/activation_memory.h"
#include "cost/model_flops_utilisation.h"
#include "cost/model_state_memory.h"
#include "cost/runtime_estimate.h"
#include "cost/transformer_estimate.h"
#include "cost/vram_estimate.h"
#include "cost/workload.h"
#include "train/spec/job_spec.h"

namespace jobctl::cost {
namespace {

using train::Recompute;
using train::WorkloadOptimizer;
using train::WorkloadPrecision;

double round_to(double x, double unit) { return std::round(x / unit) * unit; }

// EleutherAI, "Transformer Math 101": mixed-precision AdamW is 2 + 2 + 12 = 16 bytes per
// parameter, 112 GB for 7B parameters before activations.
TEST(ModelStateMemory, MixedPrecisionAdamWIsSixteenBytesAParameter) {
  const BytesPerParameter b = bytes_per_parameter(WorkloadPrecision::bf16, WorkloadOptimizer::adamw);
  EXPECT_EQ(b.weights, 2);
  EXPECT_EQ(b.gradients, 2);
  EXPECT_EQ(b.optimizer, 12);
  EXPECT_EQ(model_state_bytes(7e9, b, 0, 1).total(), 112e9);
  EXPECT_EQ(bytes_per_parameter(WorkloadPrecision::fp16, WorkloadOptimizer::adamw).total(), 16);
  // The same source's variants: fp32 AdamW 4 + 4 + 8, SGD with momentum 8 optimizer bytes mixed
  // (master copy + momentum) and 4 in fp32, 8-bit Adam 6 mixed (master copy + 1 + 1) and 2 in fp32.
  EXPECT_EQ(bytes_per_parameter(WorkloadPrecision::fp32, WorkloadOptimizer::adamw).total(), 16);
  EXPECT_EQ(bytes_per_parameter(WorkloadPrecision::bf16, WorkloadOptimizer::sgd).optimizer, 8);
  EXPECT_EQ(bytes_per_parameter(WorkloadPrecision::fp32, WorkloadOptimizer::sgd).total(), 12);
  EXPECT_EQ(bytes_per_parameter(WorkloadPrecision::bf16, WorkloadOptimizer::adam8bit).optimizer, 6);
  EXPECT_EQ(bytes_per_parameter(WorkloadPrecision::fp32, WorkloadOptimizer::adam8bit).total(), 10);
}

// Rajbhandari et al., ZeRO, Figure 1: Ψ = 7.5B, N_d = 64, K = 12: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB.
TEST(ModelStateMemory, ZeroStagesReproduceThePapersFigure) {
  const BytesPerParameter b = bytes_per_parameter(WorkloadPrecision::fp16, WorkloadOptimizer::adamw);
  EXPECT_EQ(model_state_bytes(7.5e9, b, 0, 64).total() / 1e9, 120.0);
  EXPECT_DOUBLE_EQ(round_to(model_state_bytes(7.5e9, b, 1, 64).total() / 1e9, 0.1), 31.4);
  EXPECT_DOUBLE_EQ(round_to(model_state_bytes(7.5e9, b, 2, 64).total() / 1e9, 0.1), 16.6);
  EXPECT_DOUBLE_EQ(round_to(model_state_bytes(7.5e9, b, 3, 64).total() / 1e9, 0.1), 1.9);
  // Tensor parallelism splits the weights before ZeRO shards them.
  EXPECT_DOUBLE_EQ(model_state_bytes(7.5e9, b, 0, 8, 8).total(), 120e9 / 8);
}

// Korthikanti et al., Eq. 1, 2 and 6 and section 5, in 16-bit: per layer s·b·h·(34 + 5as/h); with
// tensor parallelism s·b·h·(10 + 24/t + 5as/(ht)); selective 34·s·b·h/t; full 2·s·b·h.
TEST(ActivationMemory, ReproducesThePapersFormulas) {
  // GPT-3 175B's shape (the paper's Table 3): s 2048, h 12288, a 96, micro-batch 1, t 8.
  const double s = 2048, b = 1, h = 12288, a = 96;
  ActivationShape x{s, b, h, a, 51200, 96, 2, 1};
  EXPECT_DOUBLE_EQ(layer_activation_bytes(x, Recompute::none), s * b * h * (34 + 5 * a * s / h));
  EXPECT_DOUBLE_EQ(layer_activation_bytes(x, Recompute::selective), 34 * s * b * h);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(x, Recompute::full), 2 * s * b * h);
  x.tensor_parallel = 8;
  const double t = 8;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(x, Recompute::none), s * b * h * (10 + 24 / t + 5 * a * s / (h * t)));
  EXPECT_DOUBLE_EQ(layer_activation_bytes(x, Recompute::selective), 34 * s * b * h / t);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(x, Recompute::full), 2 * s * b * h);
  // Outside the layers: 4·s·b·h·(1 + v/h)/t plus the embedding's dropout mask s·b·h/t.
  EXPECT_DOUBLE_EQ(outside_layers_activation_bytes(x), 4 * s * b * h * (1 + 51200 / h) / t + s * b * h / t);
  EXPECT_DOUBLE_EQ(activation_bytes(x, Recompute::full), 96 * 2 * s * b * h + outside_layers_activation_bytes(x));
  // In fp32 the 16 values per s·b·h and the two a·s²·b values double; the one-byte masks do not.
  x.tensor_parallel = 1;
  x.element_bytes = 4;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(x, Recompute::none), s * b * h * 66 + 9 * a * s * s * b);
}

// Compute 6·P·D (8·P·D with full recomputation); Llama 2 7B's 184,320 A100-80GB GPU-hours for 2T
// tokens (Touvron et al. 2023, Table 2) are 41% of the BF16 peak, the default utilisation of the
// A100 family, so the runtime estimate reproduces them to that figure's precision.
TEST(TransformerEstimate, Llama2SevenBillionGpuHours) {
  train::TransformerWorkload m;
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.parameters = 7'000'000'000;
  m.tokens = 2'000'000'000'000;
  const TransformerEstimate e = estimate_transformer(m, 1);
  EXPECT_DOUBLE_EQ(e.training_flops, 6 * 7e9 * 2e12);
  const GpuSpec* a100 = find_gpu("A100-80GB");
  ASSERT_NE(a100, nullptr);
  const double peak = peak_tflops(*a100, Precision::bf16) * 1e12;
  EXPECT_DOUBLE_EQ(round_to(e.training_flops / (184'320.0 * 3600 * peak), 0.01), 0.41);
  const double efficiency = default_efficiency(a100->name, kTransformerModelKind);
  EXPECT_EQ(efficiency, kTensorCoreBf16Utilisation);
  const double gpu_hours = estimate_runtime_hours(e.training_flops, *a100, Precision::bf16, efficiency);
  EXPECT_NEAR(gpu_hours, 184'320, 184'320 * 0.02);
  // Spread over 8 GPUs: an eighth of the hours each.
  EXPECT_NEAR(estimate_runtime_hours(e.training_flops, *a100, Precision::bf16, efficiency, 8), gpu_hours / 8, 1e-6);
  // GPT-3's 21.3% on GPUs without BF16 tensor cores.
  EXPECT_EQ(default_efficiency("V100", kTransformerModelKind), kPreAmpereUtilisation);
  m.recompute = Recompute::full;
  EXPECT_DOUBLE_EQ(estimate_transformer(m, 1).training_flops, 8 * 7e9 * 2e12);
}

TEST(TransformerEstimate, ShapeParametersTokensAndMemoryPerGpu) {
  train::TransformerWorkload m;
  m.layers = 2;
  m.hidden = 64;
  m.heads = 4;
  m.vocab = 100;
  m.seq_len = 32;
  m.micro_batch = 3;
  m.accumulate_steps = 2;
  m.steps = 10;
  m.tensor_parallel = 2;
  m.zero_stage = 1;
  // 12·L·h² + 13·L·h + 2·V·h + s·h + 2·h
  EXPECT_EQ(transformer_parameters(m), 12.0 * 2 * 64 * 64 + 13 * 2 * 64 + 2 * 100 * 64 + 32 * 64 + 2 * 64);
  const TransformerEstimate e = estimate_transformer(m, 8);
  EXPECT_EQ(e.data_parallel, 4);
  EXPECT_EQ(e.tokens, 10.0 * 3 * 32 * 2 * 4);
  // The loss's gradients at the start of backward: two fp32 tensors of logits, split t ways.
  EXPECT_DOUBLE_EQ(e.loss_peak_bytes, 8.0 * 32 * 3 * 100 / 2);
  const double base = e.model_state.total() + e.activation_bytes + e.loss_peak_bytes;
  EXPECT_DOUBLE_EQ(e.model_state.optimizer, 12 * e.parameters / 2 / 4);
  EXPECT_DOUBLE_EQ(e.allowance_bytes, static_cast<double>(kWorkspaceFixedBytes) + std::ceil(kWorkspaceFraction * base));
  EXPECT_DOUBLE_EQ(e.total_bytes, base + e.allowance_bytes);
  // More GPUs shard more under ZeRO: less memory each.
  EXPECT_LT(estimate_transformer(m, 16).total_bytes, e.total_bytes);
}

// A command job that describes its workload is a transformer workload: priced from its compute,
// placed by its memory, with an efficiency class of its own.
TEST(TransformerEstimate, CommandJobWorkloadFromTheSpec) {
  auto spec = train::parse_job_spec(R"({"command": ["python3", "train.py"], "resources": {"gpus": 2},
    "estimate": {"model": {"layers": 32, "hidden": 4096, "heads": 32, "vocab": 32000, "seq_len": 2048,
                           "tokens": 1000000000, "zero_stage": 3}}})");
  ASSERT_TRUE(spec) << spec.error().message;
  const Workload w = workload_from_spec(*spec, train::ModelStats{});
  EXPECT_EQ(w.model_kind, kTransformerModelKind);
  EXPECT_EQ(w.precision, Precision::bf16);
  EXPECT_FALSE(w.assumed_hours);
  const TransformerEstimate e = estimate_transformer(*spec->estimate->model, 2);
  EXPECT_DOUBLE_EQ(w.training_flops, 6 * e.parameters * 1e9);
  EXPECT_EQ(w.vram_bytes_per_gpu, static_cast<int64_t>(std::ceil(e.total_bytes)));
  EXPECT_EQ(vram_bytes_for(w, 2), w.vram_bytes_per_gpu);
  EXPECT_GT(vram_bytes_for(w, 1), 2 * vram_bytes_for(w, 4) - 1);
}

}  // namespace
}  // namespace jobctl::cost
