// A model built from a spec: the layer stack of an MLP or a CNN, its flat parameter and gradient
// arrays, forward and backward passes.
//
//   MLP: dense(hidden[i]) + activation for each i, then dense(classes)
//   CNN: for each c in channels: conv 3x3 (c filters) + ReLU, max-pool 2x2; flatten (NHWC);
//        dense(hidden[i]) + activation for each i; then dense(classes)
// Layer names and parameter counts match model_stats() ("conv1", "pool1", "dense1", ...).
//
// Parameters live in one flat array, layer by layer (weights then biases), and so do the
// gradients at the same offsets: the optimizer, the gradient clipping and the checkpoint each
// handle the whole model in one piece. A bf16 network also keeps a bf16 copy of the parameters,
// refreshed from the fp32 ones at every forward pass (the fp32 ones are the master weights).
//
// Activations live in one arena laid out by plan_activations() (activation_plan.h): with
// recompute, backward() re-runs the forward pass of every segment but the last from its kept
// input before going back through it. The same kernels on the same inputs give the same bits, so
// recomputation changes memory and time, never results.
//
// Ownership: Network owns its layers and buffers; the Backend must outlive it. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "train/kernels/backend.h"
#include "train/model/layers.h"
#include "train/spec/activation_plan.h"
#include "train/spec/job_spec.h"
#include "train/tensor/device_buffer.h"

namespace jobctl::train {

class Network {
 public:
  Network(const ModelSpec& model, const InputShape& input, int max_batch, Precision precision, bool recompute,
          Backend& backend);

  size_t parameter_count() const { return params_.size(); }
  int input_features() const { return input_features_; }
  int classes() const { return classes_; }
  int max_batch() const { return max_batch_; }
  Precision precision() const { return precision_; }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  // Offset of each layer's parameters in the flat array (same order as layers()).
  const std::vector<size_t>& parameter_offsets() const { return offsets_; }
  // Where the activations are kept (per sample) and how the layers are cut for recomputation.
  const ActivationPlan& activation_plan() const { return plan_; }

  // A hash of the layer structure (names, shapes, parameter counts): a checkpoint records it, so
  // weights are never loaded into a differently shaped model.
  uint64_t layout_hash() const;

  // The seeded initial parameters (host memory, flat layout). The same seed gives the same values
  // on every backend.
  std::vector<float> initial_parameters(uint64_t seed) const;

  float* params() { return params_.data(); }
  float* grads() { return grads_.data(); }
  DeviceBuffer<float>& param_buffer() { return params_; }
  DeviceBuffer<float>& grad_buffer() { return grads_; }

  // Forward pass over `batch` (<= max_batch) samples of input_features() fp32 values; returns the
  // logits [batch, classes] (valid until the next forward). `x` must stay unchanged until the
  // backward pass that follows (recomputation reads it again).
  const float* forward(const float* x, int batch);
  // Where the loss writes d loss / d logits, [max_batch, classes].
  float* logits_grad() { return dlogits_.data(); }
  // Backward pass from logits_grad() for the last forward: writes grads(), or adds to them when
  // `accumulate` (the later micro-batches of an optimizer step).
  void backward(int batch, bool accumulate);

 private:
  Activations run_forward(size_t begin, size_t end, Activations in, int batch);

  Backend& backend_;
  int input_features_ = 0;
  int classes_ = 0;
  int max_batch_ = 0;
  Precision precision_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<size_t> offsets_;
  ActivationPlan plan_;
  DeviceBuffer<float> params_;
  DeviceBuffer<float> grads_;
  DeviceBuffer<bf16_t> params16_;     // bf16 networks: the products' copy of the parameters
  DeviceBuffer<bf16_t> x16_;          // bf16 networks: the input batch
  DeviceBuffer<uint8_t> activations_; // every layer's output and internals (plan_)
  DeviceBuffer<float> layer_grads_[2];  // gradients passed between layers, alternately
  DeviceBuffer<float> dcol_;
  DeviceBuffer<bf16_t> dpre16_;
  DeviceBuffer<float> dlogits_;
  Activations input_;                 // the last forward's input
  std::vector<Activations> outputs_;  // each layer's output in the last forward
};

}  // namespace jobctl::train
