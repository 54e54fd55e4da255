// The layers of the training core's models, each running on a Backend.
//
//   DenseLayer      y = act(x W^T + b), W stored [out, in] row-major; act none/relu/gelu
//   ConvReluLayer   3x3 convolution, stride 1, padding 1, + bias + ReLU over NHWC images,
//                   as im2col ([N*H*W, 9*Cin]) and one GEMM with W stored [Cout, 9*Cin]
//   MaxPoolLayer    2x2 max-pool, stride 2 (odd edges dropped)
//
// Precision: in an fp32 network activations are fp32. In a bf16 network the activations that
// feed matrix products (layer outputs, im2col matrices) are bf16, the products run on bf16
// operands (the network's bf16 copy of the weights) with fp32 accumulation, and pre-activations,
// gradients and parameters stay fp32; pre-activation gradients are rounded to bf16 where they
// enter a product.
//
// Memory: a layer allocates nothing itself. It states how many bytes per sample its output and its
// internals (what only its own backward needs: pre-activations, the im2col matrix, pooling
// arg-max) take, and the Network points it at memory for them (bind_activations), which lets the
// Network share memory among layers when it recomputes activations. forward() returns its output;
// backward() takes the gradient of its output (which it may overwrite), writes the gradient of its
// input when `din` is not null, and writes its parameter gradients, or adds to them when
// `accumulate` (micro-batches). backward() needs the internals of this layer's last forward().
//
// Ownership: layers are owned by Network; the Backend must outlive them. Not thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "train/data/rng.h"
#include "train/kernels/backend.h"
#include "train/spec/job_spec.h"

namespace jobctl::train {

// Per-sample tensor geometry (NHWC; a flat vector is 1 x 1 x features).
struct Shape3 {
  int h = 1, w = 1, c = 1;
  int size() const { return h * w * c; }
};

// A batch of activations in backend memory: fp32, or bf16 in a bf16 network.
struct Activations {
  const float* f32 = nullptr;
  const bf16_t* bf16 = nullptr;
};

// Scratch the Network shares among its layers; nothing in it is kept between calls.
struct LayerScratch {
  float* dcol = nullptr;     // the gradient of an im2col matrix (conv layers with an input gradient)
  bf16_t* dpre16 = nullptr;  // bf16 networks: a pre-activation gradient as a product operand
};

class Layer {
 public:
  Layer(std::string name, Backend& backend, Precision precision)
      : name_(std::move(name)), backend_(backend), bf16_(precision == Precision::bf16) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  virtual Shape3 input_shape() const = 0;
  virtual Shape3 output_shape() const = 0;
  virtual size_t weight_count() const { return 0; }
  virtual size_t bias_count() const { return 0; }
  size_t parameter_count() const { return weight_count() + bias_count(); }

  // Bytes per sample of the output and of the internals; scratch floats / bf16 values per sample.
  virtual size_t output_bytes_per_sample() const = 0;
  virtual size_t internal_bytes_per_sample() const { return 0; }
  virtual size_t dcol_floats_per_sample() const { return 0; }
  virtual size_t dpre16_per_sample() const { return 0; }

  // Points the layer at its parameters and gradients (weights first, then biases) and, in a bf16
  // network, at the bf16 copy of its parameters.
  void bind(float* params, float* grads, const bf16_t* params16) {
    params_ = params;
    grads_ = grads;
    params16_ = params16;
  }
  // Points the layer at memory for `max_batch` samples of its output and internals.
  void bind_activations(void* output, void* internals, int max_batch, LayerScratch scratch) {
    output_ = output;
    internals_ = static_cast<unsigned char*>(internals);
    max_batch_ = static_cast<size_t>(max_batch);
    scratch_ = scratch;
  }
  // Writes the initial values of this layer's parameters (weights then biases) to host memory.
  virtual void initialize(Rng& rng, float* host_params) const { (void)rng; (void)host_params; }

  virtual Activations forward(Activations in, int batch) = 0;
  virtual void backward(float* dout, float* din, int batch, bool accumulate) = 0;

 protected:
  // The internals are consecutive blocks of max_batch samples each; block `i` starts after the
  // blocks before it (`bytes_before` per sample).
  template <class T>
  T* internal(size_t bytes_before) const {
    return reinterpret_cast<T*>(internals_ + bytes_before * max_batch_);
  }
  // Activation byte size of `n` elements in this network's activation type.
  size_t activation_bytes(size_t n) const { return n * (bf16_ ? sizeof(bf16_t) : sizeof(float)); }

  std::string name_;
  Backend& backend_;
  bool bf16_;
  float* params_ = nullptr;
  float* grads_ = nullptr;
  const bf16_t* params16_ = nullptr;
  void* output_ = nullptr;
  unsigned char* internals_ = nullptr;
  size_t max_batch_ = 0;
  LayerScratch scratch_;
};

class DenseLayer final : public Layer {
 public:
  DenseLayer(std::string name, Backend& backend, Precision precision, int in, int out, ActivationFn act);

  Shape3 input_shape() const override { return {1, 1, in_}; }
  Shape3 output_shape() const override { return {1, 1, out_}; }
  size_t weight_count() const override { return static_cast<size_t>(in_) * out_; }
  size_t bias_count() const override { return static_cast<size_t>(out_); }
  // Output: act(pre) in the activation type; without an activation, pre itself (fp32, the logits).
  size_t output_bytes_per_sample() const override;
  size_t internal_bytes_per_sample() const override;  // pre (fp32), unless pre_in_output()
  size_t dpre16_per_sample() const override { return bf16_ ? static_cast<size_t>(out_) : 0; }
  // He-uniform weights before an activation, Glorot-uniform for the output layer; zero biases.
  void initialize(Rng& rng, float* host_params) const override;
  Activations forward(Activations in, int batch) override;
  void backward(float* dout, float* din, int batch, bool accumulate) override;

 private:
  // fp32 without an activation or with ReLU: the output holds the pre-activation's information.
  bool pre_in_output() const { return act_ == ActivationFn::none || (!bf16_ && act_ == ActivationFn::relu); }
  float* pre() const { return pre_in_output() ? static_cast<float*>(output_) : internal<float>(0); }

  int in_, out_;
  ActivationFn act_;
  Activations input_;  // the last forward's input (kept by its owner)
};

class ConvReluLayer final : public Layer {
 public:
  ConvReluLayer(std::string name, Backend& backend, Precision precision, Shape3 in, int out_channels,
                bool needs_input_grad);

  Shape3 input_shape() const override { return in_; }
  Shape3 output_shape() const override { return {in_.h, in_.w, cout_}; }
  size_t weight_count() const override { return static_cast<size_t>(cout_) * 9 * in_.c; }
  size_t bias_count() const override { return static_cast<size_t>(cout_); }
  size_t output_bytes_per_sample() const override;
  size_t internal_bytes_per_sample() const override;  // pre (fp32; bf16 only), then the im2col matrix
  size_t dcol_floats_per_sample() const override { return needs_input_grad_ ? col_elements() : 0; }
  size_t dpre16_per_sample() const override { return bf16_ ? static_cast<size_t>(in_.h) * in_.w * cout_ : 0; }
  // He-uniform over fan-in 9 * Cin; zero biases.
  void initialize(Rng& rng, float* host_params) const override;
  Activations forward(Activations in, int batch) override;
  void backward(float* dout, float* din, int batch, bool accumulate) override;

 private:
  size_t col_elements() const { return static_cast<size_t>(in_.h) * in_.w * 9 * in_.c; }
  size_t pre_bytes() const;

  Shape3 in_;
  int cout_;
  bool needs_input_grad_;
};

class MaxPoolLayer final : public Layer {
 public:
  MaxPoolLayer(std::string name, Backend& backend, Precision precision, Shape3 in);

  Shape3 input_shape() const override { return in_; }
  Shape3 output_shape() const override { return {in_.h / 2, in_.w / 2, in_.c}; }
  size_t output_bytes_per_sample() const override { return activation_bytes(output_shape().size()); }
  size_t internal_bytes_per_sample() const override { return static_cast<size_t>(output_shape().size()); }  // arg-max
  Activations forward(Activations in, int batch) override;
  void backward(float* dout, float* din, int batch, bool accumulate) override;

 private:
  Shape3 in_;
};

}  // namespace jobctl::train
