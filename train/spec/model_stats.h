// What a model costs to train, computed from the spec alone (no weights are allocated): the
// numbers cost/ needs for runtime and memory estimates.
//
// Counting rules (docs/job-spec.md repeats them):
//  - parameters: weights + biases of every dense and conv layer.
//  - forward FLOPs per sample: 2 * in * out per dense layer; 2 * Cin * 9 * Cout * H * W per 3x3
//    conv (real output size); element-wise ops (bias, activation, pooling, softmax) are counted
//    as 1 FLOP per element they touch, so small models are not estimated as free.
//  - training FLOPs per sample = 3 x forward (the backward pass costs about twice the forward),
//    which for dense layers is the familiar 6 x parameters.
//  - activation bytes per sample: every fp32 tensor the backward pass keeps per sample (layer
//    inputs, pre-activations, pooling indices, logits), i.e. what a batch adds to memory.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/spec/job_spec.h"

namespace jobctl::train {

struct LayerStats {
  std::string name;          // "dense1", "conv2", "pool1", ...
  int64_t parameters = 0;
  double forward_flops = 0;  // per sample
  int64_t output_elements = 0;  // per sample
};

struct ModelStats {
  int64_t parameters = 0;
  double forward_flops_per_sample = 0;
  double training_flops_per_sample = 0;   // forward + backward
  int64_t activation_bytes_per_sample = 0;
  int64_t weight_bytes = 0;               // fp32 weights
  int64_t gradient_bytes = 0;             // same size as the weights
  int64_t optimizer_state_bytes = 0;      // AdamW: 2 x weights; SGD with momentum: 1 x weights
  int64_t train_samples_per_epoch = 0;
  std::vector<LayerStats> layers;

  // Total training FLOPs for the whole spec (samples x epochs x training FLOPs per sample).
  double total_training_flops(int epochs) const {
    return training_flops_per_sample * static_cast<double>(train_samples_per_epoch) * epochs;
  }
  // Memory a training run needs for a batch of `batch` samples (weights, gradients, optimizer
  // state, activations); what the VRAM estimate starts from.
  int64_t training_bytes(int batch) const {
    return weight_bytes + gradient_bytes + optimizer_state_bytes +
           activation_bytes_per_sample * static_cast<int64_t>(batch);
  }
};

ModelStats model_stats(const JobSpec& spec);

}  // namespace jobctl::train
