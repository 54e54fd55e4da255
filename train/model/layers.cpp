#include "train/model/layers.h"

#include <cmath>

namespace jobctl::train {

namespace {

void fill_uniform(Rng& rng, float* dst, size_t n, double bound) {
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(rng.uniform(-bound, bound));
}

}  // namespace

DenseLayer::DenseLayer(std::string name, Backend& backend, int in, int out, ActivationFn act, int max_batch)
    : Layer(std::move(name)), backend_(backend), in_(in), out_(out), act_(act),
      pre_(backend, static_cast<size_t>(max_batch) * out),
      out_buf_(backend, act == ActivationFn::none ? 0 : static_cast<size_t>(max_batch) * out) {}

void DenseLayer::initialize(Rng& rng, float* host_params) const {
  const double bound = act_ == ActivationFn::none ? std::sqrt(6.0 / (in_ + out_)) : std::sqrt(6.0 / in_);
  fill_uniform(rng, host_params, weight_count(), bound);
  for (size_t i = 0; i < bias_count(); ++i) host_params[weight_count() + i] = 0.0f;
}

const float* DenseLayer::forward(const float* in, int batch) {
  input_ = in;
  const float* w = params_;
  const float* b = params_ + weight_count();
  backend_.gemm(Transpose::no, Transpose::yes, batch, out_, in_, 1.0f, in, in_, w, in_, 0.0f, pre_.data(), out_);
  float* out = act_ == ActivationFn::none ? pre_.data() : out_buf_.data();
  backend_.bias_activation_forward(batch, out_, b, act_, pre_.data(), out);
  return out;
}

void DenseLayer::backward(float* dout, float* din, int batch) {
  float* dw = grads_;
  float* db = grads_ + weight_count();
  // dout becomes d(pre) in place.
  backend_.bias_activation_backward(batch, out_, act_, pre_.data(), dout, dout, db);
  backend_.gemm(Transpose::yes, Transpose::no, out_, in_, batch, 1.0f, dout, out_, input_, in_, 0.0f, dw, in_);
  if (din) backend_.gemm(Transpose::no, Transpose::no, batch, in_, out_, 1.0f, dout, out_, params_, in_, 0.0f, din, in_);
}

ConvReluLayer::ConvReluLayer(std::string name, Backend& backend, Shape3 in, int out_channels, int max_batch,
                             bool needs_input_grad)
    : Layer(std::move(name)), backend_(backend), in_(in), cout_(out_channels),
      col_(backend, static_cast<size_t>(max_batch) * in.h * in.w * 9 * in.c),
      pre_(backend, static_cast<size_t>(max_batch) * in.h * in.w * out_channels),
      out_buf_(backend, static_cast<size_t>(max_batch) * in.h * in.w * out_channels),
      dcol_(backend, needs_input_grad ? static_cast<size_t>(max_batch) * in.h * in.w * 9 * in.c : 0) {}

void ConvReluLayer::initialize(Rng& rng, float* host_params) const {
  fill_uniform(rng, host_params, weight_count(), std::sqrt(6.0 / (9.0 * in_.c)));
  for (size_t i = 0; i < bias_count(); ++i) host_params[weight_count() + i] = 0.0f;
}

const float* ConvReluLayer::forward(const float* in, int batch) {
  const int rows = batch * in_.h * in_.w;
  const int k = 9 * in_.c;
  backend_.im2col3x3(batch, in_.h, in_.w, in_.c, in, col_.data());
  backend_.gemm(Transpose::no, Transpose::yes, rows, cout_, k, 1.0f, col_.data(), k, params_, k, 0.0f, pre_.data(),
                cout_);
  backend_.bias_activation_forward(rows, cout_, params_ + weight_count(), ActivationFn::relu, pre_.data(),
                                   out_buf_.data());
  return out_buf_.data();
}

void ConvReluLayer::backward(float* dout, float* din, int batch) {
  const int rows = batch * in_.h * in_.w;
  const int k = 9 * in_.c;
  backend_.bias_activation_backward(rows, cout_, ActivationFn::relu, pre_.data(), dout, dout, grads_ + weight_count());
  backend_.gemm(Transpose::yes, Transpose::no, cout_, k, rows, 1.0f, dout, cout_, col_.data(), k, 0.0f, grads_, k);
  if (din) {
    backend_.gemm(Transpose::no, Transpose::no, rows, k, cout_, 1.0f, dout, cout_, params_, k, 0.0f, dcol_.data(), k);
    backend_.col2im3x3(batch, in_.h, in_.w, in_.c, dcol_.data(), din);
  }
}

MaxPoolLayer::MaxPoolLayer(std::string name, Backend& backend, Shape3 in, int max_batch)
    : Layer(std::move(name)), backend_(backend), in_(in),
      out_buf_(backend, static_cast<size_t>(max_batch) * (in.h / 2) * (in.w / 2) * in.c),
      argmax_(backend, static_cast<size_t>(max_batch) * (in.h / 2) * (in.w / 2) * in.c) {}

const float* MaxPoolLayer::forward(const float* in, int batch) {
  backend_.maxpool2x2_forward(batch, in_.h, in_.w, in_.c, in, out_buf_.data(), argmax_.data());
  return out_buf_.data();
}

void MaxPoolLayer::backward(float* dout, float* din, int batch) {
  if (din) backend_.maxpool2x2_backward(batch, in_.h, in_.w, in_.c, dout, argmax_.data(), din);
}

}  // namespace jobctl::train
