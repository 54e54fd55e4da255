// Finite-difference gradient checks for every layer, the loss, and whole networks.
//
// Each layer is checked on L = sum_i r_i * out_i for random weights r: the analytic gradients come
// from backward() with dout = r; the numerical ones from central differences in the input and in
// every parameter. The kernels compute in fp32, so the check uses a step h = 1e-2 (1e-3 for the
// end-to-end loss, a single O(1) scalar), small layers (rounding in L stays ~1e-6) and the
// tolerance |numerical - analytic| <= 2e-3 + 2e-2 * |analytic|.
//
// ReLU and max-pool are piecewise linear: a coordinate whose +-h perturbation crosses a kink
// (detected by a change in the output's ReLU pattern, or by one-sided slopes that disagree) is
// skipped, and each check requires that at least 70% of the coordinates were compared. Max-pool
// inputs are well separated so that no arg-max changes within +-h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "test_util.h"
#include "train/kernels/cpu_backend.h"
#include "train/kernels/cpu_ops.h"
#include "train/model/layers.h"
#include "train/model/network.h"

namespace jobctl::train {
namespace {

using testing::random_floats;

constexpr double kAtol = 2e-3;
constexpr double kRtol = 2e-2;

bool close(double numerical, double analytic) {
  return std::abs(numerical - analytic) <= kAtol + kRtol * std::abs(analytic);
}

struct Counter {
  int compared = 0;
  int skipped = 0;
};

// L(out) = sum r_i * out_i in double.
double weighted_sum(const float* out, const std::vector<float>& r) {
  double s = 0;
  for (size_t i = 0; i < r.size(); ++i) s += static_cast<double>(r[i]) * out[i];
  return s;
}

std::vector<bool> positive_pattern(const float* out, size_t n) {
  std::vector<bool> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = out[i] > 0.0f;
  return p;
}

// Host memory for a standalone layer's activations and scratch (CpuBackend memory is host memory).
struct LayerMemory {
  LayerMemory(Layer& layer, int batch)
      : output(layer.output_bytes_per_sample() * static_cast<size_t>(batch)),
        internals(layer.internal_bytes_per_sample() * static_cast<size_t>(batch) + 1),
        dcol(layer.dcol_floats_per_sample() * static_cast<size_t>(batch)),
        dpre16(layer.dpre16_per_sample() * static_cast<size_t>(batch)) {
    layer.bind_activations(output.data(), internals.data(), batch, LayerScratch{dcol.data(), dpre16.data()});
  }
  std::vector<float> output;  // floats: aligned for any element type
  std::vector<float> internals;
  std::vector<float> dcol;
  std::vector<bf16_t> dpre16;
};

// Checks one layer's input and parameter gradients. `relu_output`: the output passes through a
// ReLU, so a changed sign pattern marks a kink.
void check_layer(Layer& layer, int batch, std::vector<float>& x, std::vector<float>& params, bool relu_output,
                 bool check_input = true) {
  const size_t out_n = static_cast<size_t>(batch) * layer.output_shape().size();
  std::vector<float> grads(params.size());
  layer.bind(params.data(), grads.data(), nullptr);
  LayerMemory memory(layer, batch);
  const auto r = random_floats(out_n, 99);

  // Analytic.
  const float* out0 = layer.forward({x.data(), nullptr}, batch).f32;
  const double l0 = weighted_sum(out0, r);
  const auto pattern0 = positive_pattern(out0, out_n);
  std::vector<float> dout = r, din(x.size());
  layer.backward(dout.data(), check_input ? din.data() : nullptr, batch, false);
  const std::vector<float> grads0 = grads;

  const float h = 1e-2f;
  Counter count;
  auto check = [&](std::vector<float>& v, size_t i, double analytic, const char* what) {
    const float saved = v[i];
    v[i] = saved + h;
    const float* op = layer.forward({x.data(), nullptr}, batch).f32;
    const double lp = weighted_sum(op, r);
    const bool same_p = !relu_output || positive_pattern(op, out_n) == pattern0;
    v[i] = saved - h;
    const float* om = layer.forward({x.data(), nullptr}, batch).f32;
    const double lm = weighted_sum(om, r);
    const bool same_m = !relu_output || positive_pattern(om, out_n) == pattern0;
    v[i] = saved;
    if (!same_p || !same_m) {
      ++count.skipped;
      return;
    }
    ++count.compared;
    const double numerical = (lp - lm) / (2.0 * h);
    EXPECT_TRUE(close(numerical, analytic))
        << layer.name() << " d/d" << what << "[" << i << "]: numerical " << numerical << " analytic " << analytic
        << " (L0 " << l0 << ")";
  };
  if (check_input)
    for (size_t i = 0; i < x.size(); ++i) check(x, i, din[i], "input");
  for (size_t i = 0; i < params.size(); ++i) check(params, i, grads0[i], "param");
  EXPECT_GE(count.compared, (count.compared + count.skipped) * 7 / 10) << layer.name() << ": too many kinks skipped";
}

std::vector<float> init_params(const Layer& layer, uint64_t seed) {
  std::vector<float> p(layer.parameter_count());
  Rng rng(seed);
  layer.initialize(rng, p.data());
  // Non-zero biases, so the bias path is exercised with something to see.
  auto b = random_floats(layer.bias_count(), seed + 1, -0.3f, 0.3f);
  std::copy(b.begin(), b.end(), p.begin() + static_cast<std::ptrdiff_t>(layer.weight_count()));
  return p;
}

TEST(GradCheck, DenseLayerWithEachActivation) {
  CpuBackend be(1);
  for (ActivationFn act : {ActivationFn::none, ActivationFn::relu, ActivationFn::gelu}) {
    DenseLayer layer("dense", be, Precision::fp32, 7, 5, act);
    auto params = init_params(layer, 1);
    auto x = random_floats(3 * 7, 2);
    check_layer(layer, 3, x, params, act == ActivationFn::relu);
  }
}

TEST(GradCheck, ConvReluLayer) {
  CpuBackend be(1);
  // 2 samples of 5 x 4 x 2 -> 3 filters; the input gradient runs through col2im.
  ConvReluLayer layer("conv", be, Precision::fp32, Shape3{5, 4, 2}, 3, true);
  auto params = init_params(layer, 3);
  auto x = random_floats(2 * 5 * 4 * 2, 4);
  check_layer(layer, 2, x, params, true);
}

TEST(GradCheck, ConvReluLayerSingleChannelInput) {
  CpuBackend be(1);
  ConvReluLayer layer("conv", be, Precision::fp32, Shape3{6, 6, 1}, 4, true);
  auto params = init_params(layer, 5);
  auto x = random_floats(2 * 6 * 6, 6);
  check_layer(layer, 2, x, params, true);
}

TEST(GradCheck, MaxPoolLayer) {
  CpuBackend be(1);
  MaxPoolLayer layer("pool", be, Precision::fp32, Shape3{4, 5, 3});  // odd width: the last column is dropped
  // Well-separated inputs: a shuffled 0.1-spaced ramp, so +-h never changes an arg-max.
  std::vector<float> x(2 * 4 * 5 * 3);
  std::iota(x.begin(), x.end(), 0.0f);
  Rng rng(8);
  for (size_t i = x.size(); i > 1; --i) std::swap(x[i - 1], x[rng.uniform_index(i)]);
  for (float& v : x) v *= 0.1f;
  std::vector<float> params;
  check_layer(layer, 2, x, params, false);
}

TEST(GradCheck, SoftmaxCrossEntropyLoss) {
  CpuBackend be(1);
  const int rows = 4, classes = 6;
  auto logits = random_floats(rows * classes, 10, -3.0f, 3.0f);
  const auto labels = testing::random_labels(rows, classes, 11);
  std::vector<float> d(logits.size()), row(rows);
  be.softmax_cross_entropy(rows, classes, logits.data(), labels.data(), 1.0f / rows, d.data(), row.data());
  auto loss = [&] {
    std::vector<float> dd(logits.size()), rr(rows);
    be.softmax_cross_entropy(rows, classes, logits.data(), labels.data(), 1.0f / rows, dd.data(), rr.data());
    double s = 0;
    for (float v : rr) s += v;
    return s / rows;  // the mean, in double, from the per-row losses
  };
  const float h = 1e-2f;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float saved = logits[i];
    logits[i] = saved + h;
    const double lp = loss();
    logits[i] = saved - h;
    const double lm = loss();
    logits[i] = saved;
    EXPECT_TRUE(close((lp - lm) / (2 * h), d[i])) << "dlogits[" << i << "] " << (lp - lm) / (2 * h) << " vs " << d[i];
  }
}

// End to end: mean cross-entropy of a whole network against its flat parameters.
void check_network(const ModelSpec& model, const InputShape& in, int batch, int samples_to_check,
                   bool recompute = false) {
  CpuBackend be(1);
  Network net(model, in, batch, Precision::fp32, recompute, be);
  net.param_buffer().upload(net.initial_parameters(5));
  auto x = random_floats(static_cast<size_t>(batch) * in.features(), 12);
  const auto labels = testing::random_labels(static_cast<size_t>(batch), in.classes, 13);
  std::vector<float> row(static_cast<size_t>(batch));
  auto loss = [&] {
    const float* logits = net.forward(x.data(), batch);
    be.softmax_cross_entropy(batch, in.classes, logits, labels.data(), 1.0f / static_cast<float>(batch),
                             net.logits_grad(), row.data());
    double s = 0;
    for (float v : row) s += v;
    return s / batch;
  };
  const double l0 = loss();
  net.backward(batch, false);
  const std::vector<float> grads = net.grad_buffer().to_host();
  float* p = net.params();
  Rng pick(14);
  Counter count;
  const float h = 1e-3f;
  for (int s = 0; s < samples_to_check; ++s) {
    const size_t i = static_cast<size_t>(pick.uniform_index(net.parameter_count()));
    const float saved = p[i];
    p[i] = saved + h;
    const double lp = loss();
    p[i] = saved - h;
    const double lm = loss();
    p[i] = saved;
    const double right = (lp - l0) / h, left = (l0 - lm) / h;
    // One-sided slopes differ by h * L'' (~1e-4 here) on smooth stretches, and by the slope
    // change of a ReLU whose kink lies inside [-h, h] otherwise.
    if (std::abs(right - left) > 3e-4 + 1e-2 * std::abs(right)) {
      ++count.skipped;
      continue;
    }
    ++count.compared;
    EXPECT_TRUE(close((lp - lm) / (2 * h), grads[i])) << to_string(model.activation) << " param " << i << ": numerical " << (lp - lm) / (2 * h)
                                                       << " analytic " << grads[i];
  }
  EXPECT_GE(count.compared, samples_to_check * 7 / 10);
}

TEST(GradCheck, MlpEndToEnd) {
  ModelSpec m;
  m.kind = ModelKind::mlp;
  m.hidden = {12, 8};
  m.activation = Activation::gelu;
  InputShape in;
  in.channels = 10;
  in.height = in.width = 1;
  in.classes = 4;
  check_network(m, in, 5, 150);
  m.activation = Activation::relu;
  check_network(m, in, 5, 150);
}

TEST(GradCheck, CnnEndToEnd) {
  ModelSpec m;
  m.kind = ModelKind::cnn;
  m.channels = {3, 4};
  m.hidden = {6};
  InputShape in;
  in.channels = 1;
  in.height = in.width = 8;
  in.classes = 3;
  check_network(m, in, 3, 150);
  check_network(m, in, 3, 150, true);  // with recomputation: the same gradients
}

}  // namespace
}  // namespace jobctl::train
