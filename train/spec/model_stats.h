// What a model costs to train, computed from the spec alone (no weights are allocated): the
// numbers cost/ needs for runtime and memory estimates.
//
// Counting rules (docs/job-spec.md repeats them):
//  - parameters: weights + biases of every dense and conv layer.
//  - forward FLOPs per sample: 2 * in * out per dense layer; 2 * Cin * 9 * Cout * H * W per 3x3
//    conv (real output size); element-wise ops (bias, activation, pooling, softmax) are counted
//    as 1 FLOP per element they touch, so small models are not estimated as free.
//  - training FLOPs per sample = 3 x forward (the backward pass costs about twice the forward),
//    which for dense layers is the familiar 6 x parameters; with train.recompute, plus the
//    forward FLOPs of the layers the backward pass runs again (all segments but the last).
//  - activation bytes per sample: every buffer the trainer allocates per sample of a forward pass
//    (a micro-batch): the input batch, each layer's output and internals as activation_plan.h
//    places them (bf16 where train.precision is bf16), the gradients passed between layers and
//    the layers' shared scratch. This is what the trainer allocates, byte for byte (tested).
//  - weights, gradients and optimizer state are fp32 in both precisions; bf16 adds a bf16 copy of
//    the weights (the products' operand).
//  - data bytes: the training and test sets, which the trainer copies to the device (fp32
//    features and int32 labels), the per-sample evaluation results, and the step's constants.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/spec/activation_plan.h"
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
  double training_flops_per_sample = 0;   // forward + backward (+ recomputed forward)
  int64_t activation_bytes_per_sample = 0;  // per sample of a micro-batch
  int64_t step_bytes_per_sample = 0;      // per sample of a whole optimizer step (its row losses)
  int64_t weight_bytes = 0;               // fp32 weights
  int64_t weight_copy_bytes = 0;          // bf16: the bf16 copy of the weights; fp32: 0
  int64_t gradient_bytes = 0;             // same size as the weights
  int64_t optimizer_state_bytes = 0;      // AdamW: 2 x weights; SGD with momentum: 1 x weights
  int64_t train_samples_per_epoch = 0;
  int64_t data_bytes = 0;                 // datasets on the device, evaluation buffers, step constants
  int accumulate_steps = 1;               // train.accumulate_steps
  ActivationPlan activation_plan;         // the network's layers (not the pseudo-layers below)
  std::vector<LayerStats> layers;

  // Total training FLOPs for the whole spec (samples x epochs x training FLOPs per sample).
  double total_training_flops(int epochs) const {
    return training_flops_per_sample * static_cast<double>(train_samples_per_epoch) * epochs;
  }
  // Samples per forward pass when an optimizer step takes `batch`: ceil(batch / accumulate_steps).
  int64_t micro_batch(int64_t batch) const { return (batch + accumulate_steps - 1) / accumulate_steps; }
  // Memory a training run allocates for optimizer steps of `batch` samples (weights and their bf16
  // copy, gradients, optimizer state, activations of one micro-batch, the data, and the per-step
  // loss log of an epoch): the VRAM estimate's base.
  int64_t training_bytes(int64_t batch) const {
    return weight_bytes + weight_copy_bytes + gradient_bytes + optimizer_state_bytes +
           activation_bytes_per_sample * micro_batch(batch) + step_bytes_per_sample * batch + data_bytes +
           4 * ((train_samples_per_epoch + batch - 1) / batch);
  }
};

ModelStats model_stats(const JobSpec& spec);

}  // namespace jobctl::train
