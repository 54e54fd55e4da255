#include "cost/vram_estimate.h"

#include <algorithm>
#include <cmath>

namespace jobctl::cost {

VramEstimate estimate_vram(const train::ModelStats& s, int batch_size, int gpus) {
  VramEstimate v;
  gpus = std::max(gpus, 1);
  const int64_t per_gpu_batch = (std::max(batch_size, 1) + gpus - 1) / gpus;
  v.weight_bytes = s.weight_bytes + s.weight_copy_bytes;
  v.gradient_bytes = s.gradient_bytes;
  v.optimizer_bytes = s.optimizer_state_bytes;
  // One micro-batch's activations are alive at a time; only the step's row losses scale with the
  // whole per-GPU batch.
  v.activation_bytes = s.activation_bytes_per_sample * s.micro_batch(per_gpu_batch) +
                       s.step_bytes_per_sample * per_gpu_batch;
  v.data_bytes = s.data_bytes + 4 * ((s.train_samples_per_epoch + per_gpu_batch - 1) / per_gpu_batch);
  const int64_t base = v.weight_bytes + v.gradient_bytes + v.optimizer_bytes + v.activation_bytes + v.data_bytes;
  v.workspace_bytes = kWorkspaceFixedBytes + static_cast<int64_t>(std::ceil(kWorkspaceFraction * static_cast<double>(base)));
  v.total_bytes = base + v.workspace_bytes;
  return v;
}

}  // namespace jobctl::cost
