#include "train/model/layers.h"

#include <cmath>

namespace jobctl::train {

namespace {

void fill_uniform(Rng& rng, float* dst, size_t n, double bound) {
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(rng.uniform(-bound, bound));
}

}  // namespace

// ---- dense ------------------------------------------------------------------------------------------

DenseLayer::DenseLayer(std::string name, Backend& backend, Precision precision, int in, int out, ActivationFn act)
    : Layer(std::move(name), backend, precision), in_(in), out_(out), act_(act) {}

size_t DenseLayer::output_bytes_per_sample() const {
  return act_ == ActivationFn::none ? static_cast<size_t>(out_) * sizeof(float) : activation_bytes(out_);
}

size_t DenseLayer::internal_bytes_per_sample() const {
  return pre_in_output() ? 0 : static_cast<size_t>(out_) * sizeof(float);
}

void DenseLayer::initialize(Rng& rng, float* host_params) const {
  const double bound = act_ == ActivationFn::none ? std::sqrt(6.0 / (in_ + out_)) : std::sqrt(6.0 / in_);
  fill_uniform(rng, host_params, weight_count(), bound);
  for (size_t i = 0; i < bias_count(); ++i) host_params[weight_count() + i] = 0.0f;
}

Activations DenseLayer::forward(Activations in, int batch) {
  input_ = in;
  const float* b = params_ + weight_count();
  float* z = pre();
  if (bf16_) {
    backend_.gemm_bf16(Transpose::no, Transpose::yes, batch, out_, in_, 1.0f, in.bf16, in_, params16_, in_, 0.0f, z,
                       out_);
  } else {
    backend_.gemm(Transpose::no, Transpose::yes, batch, out_, in_, 1.0f, in.f32, in_, params_, in_, 0.0f, z, out_);
  }
  if (pre_in_output()) {
    // In place: the output is the pre-activation (none) or its ReLU, whose backward needs only
    // the sign, which the ReLU keeps (relu(z) > 0 exactly when z > 0).
    backend_.bias_activation_forward(batch, out_, b, act_, z, z);
    return {z, nullptr};
  }
  if (bf16_) {
    auto* out = static_cast<bf16_t*>(output_);
    backend_.bias_activation_forward_bf16(batch, out_, b, act_, z, out);
    return {nullptr, out};
  }
  auto* out = static_cast<float*>(output_);
  backend_.bias_activation_forward(batch, out_, b, act_, z, out);
  return {out, nullptr};
}

void DenseLayer::backward(float* dout, float* din, int batch, bool accumulate) {
  float* dw = grads_;
  float* db = grads_ + weight_count();
  const float beta = accumulate ? 1.0f : 0.0f;
  // dout becomes d(pre) in place.
  backend_.bias_activation_backward(batch, out_, act_, pre(), dout, dout, db, accumulate);
  if (bf16_) {
    bf16_t* g = scratch_.dpre16;
    backend_.to_bf16(dout, static_cast<size_t>(batch) * out_, g);
    backend_.gemm_bf16(Transpose::yes, Transpose::no, out_, in_, batch, 1.0f, g, out_, input_.bf16, in_, beta, dw, in_);
    if (din)
      backend_.gemm_bf16(Transpose::no, Transpose::no, batch, in_, out_, 1.0f, g, out_, params16_, in_, 0.0f, din, in_);
    return;
  }
  backend_.gemm(Transpose::yes, Transpose::no, out_, in_, batch, 1.0f, dout, out_, input_.f32, in_, beta, dw, in_);
  if (din) backend_.gemm(Transpose::no, Transpose::no, batch, in_, out_, 1.0f, dout, out_, params_, in_, 0.0f, din, in_);
}

// ---- convolution ------------------------------------------------------------------------------------

ConvReluLayer::ConvReluLayer(std::string name, Backend& backend, Precision precision, Shape3 in, int out_channels,
                             bool needs_input_grad)
    : Layer(std::move(name), backend, precision), in_(in), cout_(out_channels), needs_input_grad_(needs_input_grad) {}

size_t ConvReluLayer::output_bytes_per_sample() const {
  return activation_bytes(static_cast<size_t>(in_.h) * in_.w * cout_);
}

size_t ConvReluLayer::internal_bytes_per_sample() const { return pre_bytes() + activation_bytes(col_elements()); }

size_t ConvReluLayer::pre_bytes() const {
  // fp32: ReLU in place in the output (its sign is all the backward needs); bf16 keeps the fp32
  // pre-activation, since the output is rounded.
  return bf16_ ? static_cast<size_t>(in_.h) * in_.w * cout_ * sizeof(float) : 0;
}

void ConvReluLayer::initialize(Rng& rng, float* host_params) const {
  fill_uniform(rng, host_params, weight_count(), std::sqrt(6.0 / (9.0 * in_.c)));
  for (size_t i = 0; i < bias_count(); ++i) host_params[weight_count() + i] = 0.0f;
}

Activations ConvReluLayer::forward(Activations in, int batch) {
  const int rows = batch * in_.h * in_.w;
  const int k = 9 * in_.c;
  const float* bias = params_ + weight_count();
  if (bf16_) {
    float* pre = internal<float>(0);
    bf16_t* col = internal<bf16_t>(pre_bytes());
    backend_.im2col3x3_bf16(batch, in_.h, in_.w, in_.c, in.bf16, col);
    backend_.gemm_bf16(Transpose::no, Transpose::yes, rows, cout_, k, 1.0f, col, k, params16_, k, 0.0f, pre, cout_);
    auto* out = static_cast<bf16_t*>(output_);
    backend_.bias_activation_forward_bf16(rows, cout_, bias, ActivationFn::relu, pre, out);
    return {nullptr, out};
  }
  auto* out = static_cast<float*>(output_);
  backend_.conv3x3_relu_forward(batch, in_.h, in_.w, in_.c, cout_, in.f32, params_, bias, internal<float>(pre_bytes()),
                                out);
  return {out, nullptr};
}

void ConvReluLayer::backward(float* dout, float* din, int batch, bool accumulate) {
  const int rows = batch * in_.h * in_.w;
  const int k = 9 * in_.c;
  const float beta = accumulate ? 1.0f : 0.0f;
  if (!bf16_) {
    // fp32: the ReLU output is the mask; the backend may fuse the whole backward.
    backend_.conv3x3_relu_backward(batch, in_.h, in_.w, in_.c, cout_, internal<float>(pre_bytes()), params_,
                                   static_cast<const float*>(output_), dout, grads_, grads_ + weight_count(), accumulate,
                                   scratch_.dcol, din);
    return;
  }
  backend_.bias_activation_backward(rows, cout_, ActivationFn::relu, internal<float>(0), dout, dout,
                                    grads_ + weight_count(), accumulate);
  bf16_t* g = scratch_.dpre16;
  backend_.to_bf16(dout, static_cast<size_t>(rows) * cout_, g);
  backend_.gemm_bf16(Transpose::yes, Transpose::no, cout_, k, rows, 1.0f, g, cout_, internal<bf16_t>(pre_bytes()), k,
                     beta, grads_, k);
  if (din) {
    backend_.gemm_bf16(Transpose::no, Transpose::no, rows, k, cout_, 1.0f, g, cout_, params16_, k, 0.0f,
                       scratch_.dcol, k);
    backend_.col2im3x3(batch, in_.h, in_.w, in_.c, scratch_.dcol, din);
  }
}

// ---- max-pool -----------------------------------------------------------------------------------------

MaxPoolLayer::MaxPoolLayer(std::string name, Backend& backend, Precision precision, Shape3 in)
    : Layer(std::move(name), backend, precision), in_(in) {}

Activations MaxPoolLayer::forward(Activations in, int batch) {
  auto* argmax = internal<uint8_t>(0);
  if (bf16_) {
    auto* out = static_cast<bf16_t*>(output_);
    backend_.maxpool2x2_forward_bf16(batch, in_.h, in_.w, in_.c, in.bf16, out, argmax);
    return {nullptr, out};
  }
  auto* out = static_cast<float*>(output_);
  backend_.maxpool2x2_forward(batch, in_.h, in_.w, in_.c, in.f32, out, argmax);
  return {out, nullptr};
}

void MaxPoolLayer::backward(float* dout, float* din, int batch, bool accumulate) {
  (void)accumulate;  // no parameters
  if (din) backend_.maxpool2x2_backward(batch, in_.h, in_.w, in_.c, dout, internal<uint8_t>(0), din);
}

}  // namespace jobctl::train
