#include "cost/workload.h"

#include "cost/vram_estimate.h"

namespace jobctl::cost {

Workload workload_from_spec(const train::JobSpec& spec, const train::ModelStats& stats) {
  Workload w;
  w.model_kind = spec.model.kind == train::ModelKind::cnn ? "cnn" : "mlp";
  w.training_flops = stats.total_training_flops(spec.train.epochs);
  w.gpus = spec.resources.gpus < 1 ? 1 : spec.resources.gpus;
  // bf16 jobs run their matrix products on bf16 tensor cores: priced at the GPU's bf16 peak.
  w.precision = spec.train.precision == train::Precision::bf16 ? Precision::bf16 : Precision::fp32;
  w.vram_bytes_per_gpu = estimate_vram(stats, spec.train.batch_size, w.gpus).total_bytes;
  // A checkpoint holds the weights and the optimizer moments; RNG and loader state are small.
  w.checkpoint_bytes = stats.weight_bytes + stats.optimizer_state_bytes + (64 << 10);
  return w;
}

}  // namespace jobctl::cost
