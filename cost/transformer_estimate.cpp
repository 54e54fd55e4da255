#include "cost/transformer_estimate.h"

#include <algorithm>
#include <cmath>

#include "cost/activation_memory.h"
#include "cost/vram_estimate.h"
#include "train/spec/job_spec.h"

namespace jobctl::cost {

double transformer_parameters(const train::TransformerWorkload& m) {
  if (m.parameters > 0) return static_cast<double>(m.parameters);
  const double l = m.layers, h = m.hidden, v = m.vocab, s = m.seq_len;
  return 12 * l * h * h + 13 * l * h + 2 * v * h + s * h + 2 * h;
}

namespace {

struct SpecWorkload {
  train::TransformerWorkload model;
  int gpus = 1;
};

Expected<SpecWorkload> spec_workload(std::string_view spec_json) {
  auto spec = train::parse_job_spec(spec_json);
  if (!spec) return Unexpected{std::move(spec).error()};
  if (!spec->estimate || !spec->estimate->model)
    return Unexpected{make_error(ErrorCode::invalid_argument,
                                 "estimate.model: the spec does not describe its workload (docs/job-spec.md)",
                                 "estimate.model")};
  return SpecWorkload{*spec->estimate->model, spec->resources.gpus};
}

}  // namespace

Expected<train::TransformerWorkload> transformer_workload_of_spec(std::string_view spec_json) {
  auto w = spec_workload(spec_json);
  if (!w) return Unexpected{std::move(w).error()};
  return w->model;
}

Expected<TransformerEstimate> estimate_transformer_spec(std::string_view spec_json, int gpus) {
  auto w = spec_workload(spec_json);
  if (!w) return Unexpected{std::move(w).error()};
  return estimate_transformer(w->model, gpus > 0 ? gpus : w->gpus);
}

std::string parallelism_text(const train::TransformerWorkload& m, int gpus) {
  std::string s;
  if (m.zero_stage > 0) s += "ZeRO-" + std::to_string(m.zero_stage);
  if (m.tensor_parallel > 1) s += (s.empty() ? "" : " and ") + std::string("tensor parallel ") + std::to_string(m.tensor_parallel);
  const std::string on = "on " + std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs");
  return s.empty() ? on : "with " + s + " " + on;
}

Precision compute_precision(train::WorkloadPrecision p) {
  switch (p) {
    case train::WorkloadPrecision::bf16: return Precision::bf16;
    case train::WorkloadPrecision::fp16: return Precision::fp16;
    case train::WorkloadPrecision::fp32: break;
  }
  return Precision::fp32;
}

TransformerEstimate estimate_transformer(const train::TransformerWorkload& m, int gpus) {
  TransformerEstimate e;
  const int t = std::max(m.tensor_parallel, 1);
  e.gpus = std::max(gpus, t);
  e.data_parallel = std::max(e.gpus / t, 1);
  e.parameters = transformer_parameters(m);
  e.tokens = m.tokens > 0 ? static_cast<double>(m.tokens)
                          : static_cast<double>(m.steps) * m.micro_batch * m.seq_len * m.accumulate_steps * e.data_parallel;
  e.training_flops = (m.recompute == train::Recompute::full ? 8.0 : 6.0) * e.parameters * e.tokens;

  e.model_state = model_state_bytes(e.parameters, bytes_per_parameter(m.precision, m.optimizer), m.zero_stage,
                                    e.data_parallel, t);
  const ActivationShape shape{static_cast<double>(m.seq_len), static_cast<double>(m.micro_batch),
                              static_cast<double>(m.hidden),  static_cast<double>(m.heads),
                              static_cast<double>(m.vocab),   m.layers,
                              m.precision == train::WorkloadPrecision::fp32 ? 4 : 2, t};
  e.activation_bytes = activation_bytes(shape, m.recompute);
  e.loss_peak_bytes = loss_peak_bytes(shape);
  const double base = e.model_state.total() + e.activation_bytes + e.loss_peak_bytes;
  e.allowance_bytes = static_cast<double>(kWorkspaceFixedBytes) + std::ceil(kWorkspaceFraction * base);
  e.total_bytes = base + e.allowance_bytes;
  return e;
}

}  // namespace jobctl::cost
