// The optimizer state of a run and its update: AdamW (two moment arrays) or SGD with momentum
// (one), over the network's flat parameter array. The arithmetic is Backend::adamw_update /
// sgd_momentum_update; this class owns the moments and the per-step constants.
//
// Ownership: owns its moment buffers; the Backend must outlive it. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "train/kernels/backend.h"
#include "train/spec/job_spec.h"
#include "train/tensor/device_buffer.h"

namespace jobctl::train {

class Optimizer {
 public:
  Optimizer(const TrainSpec& train, Backend& backend, size_t parameters);

  OptimizerKind kind() const { return kind_; }
  // AdamW: 2 (first and second moments); SGD: 1 (momentum buffer).
  int moment_count() const { return kind_ == OptimizerKind::adamw ? 2 : 1; }
  DeviceBuffer<float>& moment(int i) { return i == 0 ? m1_ : m2_; }

  // Bias corrections of AdamW step t (1-based); 1 for SGD.
  float bias_correction1(int64_t t) const;
  float bias_correction2(int64_t t) const;

  // One update with the step's scalars and clip state (both in backend memory).
  void update(float* params, const float* grads, const StepScalars* scalars, const ClipState* clip);

 private:
  Backend& backend_;
  OptimizerKind kind_;
  size_t n_;
  float beta1_, beta2_, eps_, weight_decay_, momentum_;
  DeviceBuffer<float> m1_;
  DeviceBuffer<float> m2_;
};

}  // namespace jobctl::train
