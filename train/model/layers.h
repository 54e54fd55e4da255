// The layers of the training core's models, each running on a Backend.
//
//   DenseLayer      y = act(x W^T + b), W stored [out, in] row-major; act none/relu/gelu
//   ConvReluLayer   3x3 convolution, stride 1, padding 1, + bias + ReLU over NHWC images,
//                   as im2col ([N*H*W, 9*Cin]) and one GEMM with W stored [Cout, 9*Cin]
//   MaxPoolLayer    2x2 max-pool, stride 2 (odd edges dropped)
//
// A layer owns the buffers its backward pass needs (pre-activations, the im2col matrix, pooling
// arg-max) sized for `max_batch` samples, and views its slice of the network's flat parameter and
// gradient arrays (bind()). forward() returns its output buffer; backward() takes the gradient of
// its output (which it may overwrite) and writes the gradient of its input when `din` is not null,
// and its parameter gradients (overwriting, not accumulating).
//
// Ownership: layers are owned by Network; the Backend must outlive them. Not thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "train/data/rng.h"
#include "train/kernels/backend.h"
#include "train/tensor/device_buffer.h"

namespace jobctl::train {

// Per-sample tensor geometry (NHWC; a flat vector is 1 x 1 x features).
struct Shape3 {
  int h = 1, w = 1, c = 1;
  int size() const { return h * w * c; }
};

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  virtual Shape3 input_shape() const = 0;
  virtual Shape3 output_shape() const = 0;
  virtual size_t weight_count() const { return 0; }
  virtual size_t bias_count() const { return 0; }
  size_t parameter_count() const { return weight_count() + bias_count(); }

  // Points the layer at its parameters and gradients: weights first, then biases.
  void bind(float* params, float* grads) {
    params_ = params;
    grads_ = grads;
  }
  // Writes the initial values of this layer's parameters (weights then biases) to host memory.
  virtual void initialize(Rng& rng, float* host_params) const { (void)rng; (void)host_params; }

  virtual const float* forward(const float* in, int batch) = 0;
  virtual void backward(float* dout, float* din, int batch) = 0;

 protected:
  std::string name_;
  float* params_ = nullptr;
  float* grads_ = nullptr;
};

class DenseLayer final : public Layer {
 public:
  DenseLayer(std::string name, Backend& backend, int in, int out, ActivationFn act, int max_batch);

  Shape3 input_shape() const override { return {1, 1, in_}; }
  Shape3 output_shape() const override { return {1, 1, out_}; }
  size_t weight_count() const override { return static_cast<size_t>(in_) * out_; }
  size_t bias_count() const override { return static_cast<size_t>(out_); }
  // He-uniform weights before an activation, Glorot-uniform for the output layer; zero biases.
  void initialize(Rng& rng, float* host_params) const override;
  const float* forward(const float* in, int batch) override;
  void backward(float* dout, float* din, int batch) override;

 private:
  Backend& backend_;
  int in_, out_;
  ActivationFn act_;
  const float* input_ = nullptr;  // the last forward's input (kept by its owner)
  DeviceBuffer<float> pre_;       // x W^T + b
  DeviceBuffer<float> out_buf_;   // act(pre); unused when act == none (the output is pre_)
};

class ConvReluLayer final : public Layer {
 public:
  ConvReluLayer(std::string name, Backend& backend, Shape3 in, int out_channels, int max_batch, bool needs_input_grad);

  Shape3 input_shape() const override { return in_; }
  Shape3 output_shape() const override { return {in_.h, in_.w, cout_}; }
  size_t weight_count() const override { return static_cast<size_t>(cout_) * 9 * in_.c; }
  size_t bias_count() const override { return static_cast<size_t>(cout_); }
  // He-uniform over fan-in 9 * Cin; zero biases.
  void initialize(Rng& rng, float* host_params) const override;
  const float* forward(const float* in, int batch) override;
  void backward(float* dout, float* din, int batch) override;

 private:
  Backend& backend_;
  Shape3 in_;
  int cout_;
  DeviceBuffer<float> col_;   // im2col of the input, kept for the weight gradient
  DeviceBuffer<float> pre_;
  DeviceBuffer<float> out_buf_;
  DeviceBuffer<float> dcol_;  // only when the input gradient is needed
};

class MaxPoolLayer final : public Layer {
 public:
  MaxPoolLayer(std::string name, Backend& backend, Shape3 in, int max_batch);

  Shape3 input_shape() const override { return in_; }
  Shape3 output_shape() const override { return {in_.h / 2, in_.w / 2, in_.c}; }
  const float* forward(const float* in, int batch) override;
  void backward(float* dout, float* din, int batch) override;

 private:
  Backend& backend_;
  Shape3 in_;
  DeviceBuffer<float> out_buf_;
  DeviceBuffer<uint8_t> argmax_;
};

}  // namespace jobctl::train
