#include "cost/workload.h"

#include <algorithm>
#include <cmath>

#include "base/fixed_decimal.h"
#include "base/readable.h"
#include "cost/runtime_estimate.h"
#include "cost/transformer_estimate.h"
#include "cost/vram_estimate.h"

namespace jobctl::cost {

namespace {

// A command job whose estimate.model describes a transformer: compute 6PD (8PD), memory per GPU
// from its state, activations and sharding (cost/transformer_estimate.h).
Workload transformer_workload(const train::JobSpec& spec, const train::TransformerWorkload& m) {
  Workload w;
  w.model_kind = kTransformerModelKind;
  w.gpus_auto = spec.resources.gpus_auto;
  w.gpus = requested_gpus(spec);
  const TransformerEstimate e = estimate_transformer(m, w.gpus);
  w.training_flops = e.training_flops;
  w.parameters = e.parameters;
  w.precision = compute_precision(m.precision);
  w.vram_bytes_per_gpu = static_cast<int64_t>(std::ceil(e.total_bytes));
  // A checkpoint holds the weights and the optimizer state (the master copy and moments).
  const BytesPerParameter b = bytes_per_parameter(m.precision, m.optimizer);
  w.checkpoint_bytes = static_cast<int64_t>(e.parameters * (b.weights + b.optimizer));
  w.transformer = m;
  w.runtime_note = "runtime from estimate.model: " + fixed_decimal(e.parameters / 1e9, 2) + "B parameters x " +
                   fixed_decimal(e.tokens / 1e9, 3) + "B tokens x " +
                   (m.recompute == train::Recompute::full ? "8" : "6") + " FLOPs";
  return w;
}

Workload command_workload(const train::JobSpec& spec) {
  if (spec.estimate && spec.estimate->model) return transformer_workload(spec, *spec.estimate->model);
  Workload w;
  w.model_kind = kCommandModelKind;
  w.gpus = requested_gpus(spec);
  const std::string hint_gpu = spec.estimate && !spec.estimate->gpu.empty() ? spec.estimate->gpu : "V100";
  const GpuSpec* gpu = spec.estimate ? find_gpu(hint_gpu) : nullptr;
  if (gpu) {
    w.training_flops = spec.estimate->hours *
                       effective_flops_per_hour(*gpu, Precision::fp32, default_efficiency(gpu->name, kCommandModelKind), w.gpus);
    w.runtime_note = "runtime from the spec's estimate (" + readable::duration_hours(spec.estimate->hours) + " on " + hint_gpu +
                     ", scaled by GPU speed)";
  } else {
    w.assumed_hours = kAssumedCommandHours;
    w.runtime_note = spec.estimate ? "no runtime estimate usable (estimate.gpu " + hint_gpu +
                                         " is not a known GPU model): priced per hour, assuming 1 h"
                                   : "no runtime estimate: priced per hour, assuming 1 h";
  }
  return w;
}

}  // namespace

int requested_gpus(const train::JobSpec& spec) {
  if (spec.resources.gpus_auto && spec.estimate && spec.estimate->model)
    return std::max(spec.estimate->model->tensor_parallel, 1);
  return std::max(spec.resources.gpus, 1);
}

int64_t vram_bytes_for(const Workload& w, int gpus) {
  if (!w.transformer) return w.vram_bytes_per_gpu;
  return static_cast<int64_t>(std::ceil(estimate_transformer(*w.transformer, gpus).total_bytes));
}

double training_flops_for(const Workload& w, int gpus) {
  if (!w.transformer || gpus == w.gpus) return w.training_flops;
  const double at_spec = estimate_transformer(*w.transformer, w.gpus).training_flops;
  if (!(at_spec > 0)) return w.training_flops;
  return w.training_flops * (estimate_transformer(*w.transformer, gpus).training_flops / at_spec);
}

Workload workload_from_spec(const train::JobSpec& spec, const train::ModelStats& stats) {
  if (spec.is_command()) return command_workload(spec);
  Workload w;
  w.model_kind = spec.model.kind == train::ModelKind::cnn ? "cnn" : "mlp";
  w.training_flops = stats.total_training_flops(spec.train.epochs);
  w.parameters = static_cast<double>(stats.parameters);
  w.runtime_note = "runtime from the model: " + readable::magnitude(w.parameters) + " parameters x " +
                   readable::magnitude(static_cast<double>(stats.train_samples_per_epoch) * spec.train.epochs) +
                   " samples x " + readable::magnitude(stats.training_flops_per_sample) + " FLOPs each";
  w.gpus = requested_gpus(spec);
  // bf16 jobs run their matrix products on bf16 tensor cores: priced at the GPU's bf16 peak.
  w.precision = spec.train.precision == train::Precision::bf16 ? Precision::bf16 : Precision::fp32;
  w.vram_bytes_per_gpu = estimate_vram(stats, spec.train.batch_size, w.gpus).total_bytes;
  // A checkpoint holds the weights and the optimizer moments; RNG and loader state are small.
  w.checkpoint_bytes = stats.weight_bytes + stats.optimizer_state_bytes + (64 << 10);
  return w;
}

}  // namespace jobctl::cost
