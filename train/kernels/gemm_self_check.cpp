#include "train/kernels/gemm_self_check.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "train/kernels/gemm.h"

namespace jobctl::train {

namespace {

// The models' products: dense forward (X * W^T), input and weight gradients; the CNN's im2col
// products of conv1 (k = 9) and conv2 (k = 288), and the dense layer over its 3136 features. The
// batch dimension is 36 rows, not 128: the same kernels and packing, a remainder for their edge
// code (36 is no multiple of any unroll), and a quarter of the time (it runs at every start).
constexpr GemmShape kShapes[] = {
    {Transpose::no, Transpose::yes, 36, 256, 784},   // MLP dense1 forward
    {Transpose::no, Transpose::no, 36, 256, 128},    // MLP dense2 input gradient
    {Transpose::yes, Transpose::no, 256, 784, 36},   // MLP dense1 weight gradient
    {Transpose::no, Transpose::yes, 784, 32, 9},     // conv1 over one image's 28x28 rows
    {Transpose::no, Transpose::yes, 196, 64, 288},   // conv2 over one image's 14x14 rows
    {Transpose::yes, Transpose::no, 64, 288, 196},   // conv2 weight gradient
    {Transpose::no, Transpose::yes, 36, 128, 3136},  // the CNN's dense layer
};

// Values in [-1, 1) from a 64-bit linear congruential generator (the same inputs on every run).
std::vector<float> random_matrix(uint64_t& state, size_t count) {
  std::vector<float> v(count);
  for (float& x : v) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<float>(static_cast<double>(state >> 40) / static_cast<double>(1 << 24) * 2.0 - 1.0);
  }
  return v;
}

std::string shape_name(const GemmShape& s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%c%c %dx%dx%d", s.ta == Transpose::yes ? 'T' : 'N', s.tb == Transpose::yes ? 'T' : 'N',
                s.m, s.n, s.k);
  return buf;
}

}  // namespace

std::span<const GemmShape> model_gemm_shapes() { return kShapes; }

std::string GemmCheckResult::summary() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s (worst %.1e of the magnitude sum, in %s; tolerance %.0e; %d products)",
                passed ? "passed" : "failed", worst, worst_at.c_str(), tolerance, products);
  return buf;
}

GemmCheckResult check_gemm_kernels(double tolerance) {
  GemmCheckResult result;
  result.tolerance = tolerance;
  uint64_t rng = 0x6a6f6263746cULL;
  for (const GemmShape& s : kShapes) {
    // Stored shapes: A is [m,k] or [k,m], B is [k,n] or [n,k]; row strides follow.
    const int lda = s.ta == Transpose::yes ? s.m : s.k;
    const int ldb = s.tb == Transpose::yes ? s.k : s.n;
    const auto a = random_matrix(rng, static_cast<size_t>(s.m) * s.k);
    const auto b = random_matrix(rng, static_cast<size_t>(s.k) * s.n);
    std::vector<float> abs_a(a.size()), abs_b(b.size());
    for (size_t i = 0; i < a.size(); ++i) abs_a[i] = std::fabs(a[i]);
    for (size_t i = 0; i < b.size(); ++i) abs_b[i] = std::fabs(b[i]);
    const size_t cells = static_cast<size_t>(s.m) * s.n;
    std::vector<float> c(cells), portable(cells), magnitude(cells);
    gemm_single_thread(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), s.n);
    gemm_portable(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, portable.data(), s.n);
    gemm_portable(s.ta, s.tb, s.m, s.n, s.k, 1.0f, abs_a.data(), lda, abs_b.data(), ldb, 0.0f, magnitude.data(), s.n);
    for (size_t i = 0; i < cells; ++i) {
      const double diff = std::fabs(static_cast<double>(c[i]) - portable[i]);
      double relative = magnitude[i] > 0 ? diff / magnitude[i] : (diff == 0 ? 0.0 : INFINITY);
      if (std::isnan(relative)) relative = INFINITY;  // a NaN from the kernels is a failure
      if (relative > result.worst) {
        result.worst = relative;
        result.worst_at = shape_name(s);
      }
    }
    ++result.products;
  }
  if (result.worst_at.empty()) result.worst_at = shape_name(kShapes[0]);
  result.passed = result.worst <= tolerance;
  return result;
}

}  // namespace jobctl::train
