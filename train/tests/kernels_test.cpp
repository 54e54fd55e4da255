// The CPU kernels: GEMM (OpenBLAS and the portable one) against a double-precision reference,
// and every element-wise, convolution-helper, pooling, loss, reduction and optimizer kernel
// against a direct formula; plus their determinism.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>

#include "test_util.h"
#include "train/kernels/bf16.h"
#include "train/kernels/cpu_backend.h"
#include "train/kernels/cpu_ops.h"
#include "train/kernels/gemm.h"

namespace jobctl::train {
namespace {

using testing::random_floats;
using testing::random_labels;

struct GemmCase {
  Transpose ta, tb;
  int m, n, k;
  float alpha, beta;
};

// Tolerance: fp32 accumulation over k terms of magnitude <= 1 against a double sum: relative
// 1e-5 of the sum of |terms| (k * eps32 * |a||b| bounds the worst case; real errors are far
// smaller).
void check_gemm(const GemmCase& c, bool portable) {
  const int lda = c.ta == Transpose::yes ? c.m + 3 : c.k + 2;  // padded strides
  const int ldb = c.tb == Transpose::yes ? c.k + 1 : c.n + 5;
  const int ldc = c.n + 4;
  const size_t a_rows = c.ta == Transpose::yes ? static_cast<size_t>(c.k) : static_cast<size_t>(c.m);
  const size_t b_rows = c.tb == Transpose::yes ? static_cast<size_t>(c.n) : static_cast<size_t>(c.k);
  auto a = random_floats(a_rows * lda, 1);
  auto b = random_floats(b_rows * ldb, 2);
  auto c0 = random_floats(static_cast<size_t>(c.m) * ldc, 3);
  auto got = c0, want = c0;
  if (portable)
    gemm_portable(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta, got.data(), ldc);
  else
    gemm(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta, got.data(), ldc);
  gemm_reference(c.ta, c.tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta, want.data(), ldc);
  for (int i = 0; i < c.m; ++i) {
    for (int j = 0; j < ldc; ++j) {
      const size_t at = static_cast<size_t>(i) * ldc + j;
      if (j >= c.n) {
        ASSERT_EQ(got[at], c0[at]) << "wrote outside C at " << i << "," << j;
        continue;
      }
      const double tol = 1e-5 * (std::abs(c.alpha) * c.k + std::abs(c.beta)) + 1e-6;
      ASSERT_NEAR(got[at], want[at], tol) << (portable ? "portable" : "gemm") << " m=" << c.m << " n=" << c.n
                                          << " k=" << c.k << " at " << i << "," << j;
    }
  }
}

TEST(Gemm, MatchesReferenceForAllTranspositionsAndEdgeSizes) {
  const std::vector<GemmCase> cases = {
      {Transpose::no, Transpose::no, 1, 1, 1, 1.0f, 0.0f},       {Transpose::no, Transpose::yes, 7, 13, 5, 1.0f, 0.0f},
      {Transpose::yes, Transpose::no, 33, 17, 300, 1.0f, 0.0f},  {Transpose::yes, Transpose::yes, 5, 40, 9, 0.5f, 1.0f},
      {Transpose::no, Transpose::no, 130, 70, 257, 1.0f, -0.5f}, {Transpose::no, Transpose::yes, 64, 16, 784, 1.0f, 0.0f},
      {Transpose::no, Transpose::no, 3, 2100, 4, 2.0f, 0.25f},
  };
  for (const auto& c : cases) {
    check_gemm(c, true);
    check_gemm(c, false);
  }
}

TEST(Gemm, BetaZeroDoesNotReadC) {
  std::vector<float> a(6, 1.0f), b(6, 1.0f), c(4, std::nanf(""));
  gemm(Transpose::no, Transpose::no, 2, 2, 3, 1.0f, a.data(), 3, b.data(), 2, 0.0f, c.data(), 2);
  for (float v : c) EXPECT_EQ(v, 3.0f);
  std::vector<float> c2(4, std::nanf(""));
  gemm_portable(Transpose::no, Transpose::no, 2, 2, 3, 1.0f, a.data(), 3, b.data(), 2, 0.0f, c2.data(), 2);
  for (float v : c2) EXPECT_EQ(v, 3.0f);
}

TEST(Gemm, IsDeterministic) {
  auto a = random_floats(200 * 300, 4), b = random_floats(300 * 150, 5);
  std::vector<float> c1(200 * 150), c2(200 * 150);
  gemm(Transpose::no, Transpose::no, 200, 150, 300, 1.0f, a.data(), 300, b.data(), 150, 0.0f, c1.data(), 150);
  gemm(Transpose::no, Transpose::no, 200, 150, 300, 1.0f, a.data(), 300, b.data(), 150, 0.0f, c2.data(), 150);
  EXPECT_EQ(0, std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float)));
}

TEST(Activations, ValuesAndDerivatives) {
  EXPECT_EQ(cpu::activate(ActivationFn::relu, -2.0f), 0.0f);
  EXPECT_EQ(cpu::activate(ActivationFn::relu, 3.0f), 3.0f);
  EXPECT_EQ(cpu::activate_grad(ActivationFn::relu, -1.0f), 0.0f);
  EXPECT_EQ(cpu::activate_grad(ActivationFn::relu, 1.0f), 1.0f);
  // GELU(x) = x * Phi(x): GELU(1) = 0.8413447, GELU(-1) = -0.1586553; GELU'(0) = 0.5.
  EXPECT_NEAR(cpu::activate(ActivationFn::gelu, 1.0f), 0.8413447f, 1e-6f);
  EXPECT_NEAR(cpu::activate(ActivationFn::gelu, -1.0f), -0.1586553f, 1e-6f);
  EXPECT_NEAR(cpu::activate_grad(ActivationFn::gelu, 0.0f), 0.5f, 1e-7f);
  // GELU'(1) = Phi(1) + phi(1) = 0.8413447 + 0.2419707.
  EXPECT_NEAR(cpu::activate_grad(ActivationFn::gelu, 1.0f), 1.0833154f, 1e-6f);
}

TEST(BiasActivation, ForwardAndBackwardMatchTheFormula) {
  const int rows = 37, cols = 19;
  for (ActivationFn act : {ActivationFn::none, ActivationFn::relu, ActivationFn::gelu}) {
    auto pre = random_floats(rows * cols, 6);
    const auto x = pre;
    auto bias = random_floats(cols, 7);
    std::vector<float> out(rows * cols);
    cpu::bias_activation_forward(rows, cols, bias.data(), act, pre.data(), out.data());
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) {
        const float z = x[r * cols + c] + bias[c];
        EXPECT_EQ(pre[r * cols + c], z);
        EXPECT_EQ(out[r * cols + c], cpu::activate(act, z));
      }
    auto dout = random_floats(rows * cols, 8);
    std::vector<float> dpre(rows * cols), db(cols);
    cpu::bias_activation_backward(rows, cols, act, pre.data(), dout.data(), dpre.data(), db.data(), false);
    for (int c = 0; c < cols; ++c) {
      double s = 0;
      for (int r = 0; r < rows; ++r) {
        const float want = dout[r * cols + c] * cpu::activate_grad(act, pre[r * cols + c]);
        EXPECT_NEAR(dpre[r * cols + c], want, 1e-7f);
        s += want;
      }
      EXPECT_NEAR(db[c], s, 1e-5);
    }
    // Accumulating adds the column sums to what is there.
    std::vector<float> db2 = db;
    cpu::bias_activation_backward(rows, cols, act, pre.data(), dout.data(), dpre.data(), db2.data(), true);
    for (int c = 0; c < cols; ++c) EXPECT_EQ(db2[c], db[c] + db[c]);
  }
}

TEST(SoftmaxCrossEntropy, LossAndGradientMatchTheFormula) {
  // Two rows, three classes, worked by hand: softmax([1,2,3]) = [0.0900306, 0.2447285, 0.6652410].
  const std::vector<float> logits = {1, 2, 3, 1, 2, 3};
  const std::vector<int32_t> labels = {2, 0};
  std::vector<float> d(6), row(2);
  cpu::softmax_cross_entropy(2, 3, logits.data(), labels.data(), 0.5f, d.data(), row.data());
  EXPECT_NEAR(row[0], -std::log(0.6652410), 1e-6);
  EXPECT_NEAR(row[1], -std::log(0.0900306), 1e-6);
  EXPECT_NEAR(d[0], 0.0900306 / 2, 1e-7);
  EXPECT_NEAR(d[2], (0.6652410 - 1) / 2, 1e-7);
  EXPECT_NEAR(d[3], (0.0900306 - 1) / 2, 1e-7);
  EXPECT_NEAR(cpu::mean_of(row.data(), 2), (row[0] + row[1]) / 2, 1e-7);
  // Large logits do not overflow (max subtraction).
  const std::vector<float> big = {1000, 0, -1000};
  const std::vector<int32_t> l0 = {0};
  std::vector<float> d1(3), r1(1);
  cpu::softmax_cross_entropy(1, 3, big.data(), l0.data(), 1.0f, d1.data(), r1.data());
  EXPECT_TRUE(std::isfinite(r1[0]));
  EXPECT_NEAR(r1[0], 0.0f, 1e-6f);
}

TEST(SoftmaxCrossEntropy, EvalCountsArgmaxWithLowestIndexOnTies) {
  const std::vector<float> logits = {0, 5, 5, 1, 9, 2, 3, 3, 3};
  const std::vector<int32_t> labels = {1, 1, 0};
  std::vector<float> loss(3), correct(3);
  cpu::softmax_cross_entropy_eval(3, 3, logits.data(), labels.data(), loss.data(), correct.data());
  EXPECT_EQ(correct[0], 1.0f);  // tie between 1 and 2: index 1
  EXPECT_EQ(correct[1], 1.0f);
  EXPECT_EQ(correct[2], 1.0f);  // three-way tie: index 0
  EXPECT_NEAR(loss[2], std::log(3.0), 1e-6);
}

TEST(Im2col, LayoutAndPadding) {
  // One 3x3 single-channel image 1..9; the centre pixel's row is the whole image, the corner's
  // has zeros where the window leaves the image.
  std::vector<float> img = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> col(9 * 9);
  cpu::im2col3x3(1, 3, 3, 1, img.data(), col.data());
  for (int t = 0; t < 9; ++t) EXPECT_EQ(col[4 * 9 + t], img[static_cast<size_t>(t)]);
  const std::vector<float> corner = {0, 0, 0, 0, 1, 2, 0, 4, 5};
  for (int t = 0; t < 9; ++t) EXPECT_EQ(col[t], corner[static_cast<size_t>(t)]);
}

TEST(Im2col, Col2imIsItsAdjoint) {
  // <im2col(x), y> == <x, col2im(y)> for random x, y: col2im is exactly the transpose.
  const int n = 2, h = 5, w = 4, c = 3;
  auto x = random_floats(n * h * w * c, 9);
  auto y = random_floats(static_cast<size_t>(n) * h * w * 9 * c, 10);
  std::vector<float> col(y.size()), back(x.size());
  cpu::im2col3x3(n, h, w, c, x.data(), col.data());
  cpu::col2im3x3(n, h, w, c, y.data(), back.data());
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < y.size(); ++i) lhs += static_cast<double>(col[i]) * y[i];
  for (size_t i = 0; i < x.size(); ++i) rhs += static_cast<double>(x[i]) * back[i];
  EXPECT_NEAR(lhs, rhs, 1e-4 * std::abs(lhs) + 1e-4);
}

TEST(MaxPool, ForwardPicksFirstMaximumAndBackwardRoutesGradient) {
  // 1 x 3 x 4 x 1: odd height drops the last row.
  const std::vector<float> in = {1, 5, 2, 2, 3, 5, 2, 7, 9, 9, 9, 9};
  std::vector<float> out(2);
  std::vector<uint8_t> arg(2);
  cpu::maxpool2x2_forward(1, 3, 4, 1, in.data(), out.data(), arg.data());
  EXPECT_EQ(out[0], 5.0f);
  EXPECT_EQ(arg[0], 1);  // 5 at (0,1) before 5 at (1,1)
  EXPECT_EQ(out[1], 7.0f);
  EXPECT_EQ(arg[1], 3);
  const std::vector<float> dout = {10, 20};
  std::vector<float> din(12, -1.0f);
  cpu::maxpool2x2_backward(1, 3, 4, 1, dout.data(), arg.data(), din.data());
  const std::vector<float> want = {0, 10, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0};
  EXPECT_EQ(din, want);
}

TEST(Reductions, SumOfSquaresAndClip) {
  auto x = random_floats(1001, 11);
  double want = 0;
  for (float v : x) want += static_cast<double>(v) * v;
  EXPECT_NEAR(cpu::sum_of_squares(x.data(), x.size()), want, 1e-9 * want);
  EXPECT_EQ(cpu::sum_of_squares(x.data(), x.size()), cpu::sum_of_squares(x.data(), x.size()));
  const ClipState none = cpu::clip_state(16.0, 0.0f);
  EXPECT_EQ(none.scale, 1.0f);
  EXPECT_FLOAT_EQ(none.norm, 4.0f);
  const ClipState clipped = cpu::clip_state(16.0, 2.0f);
  EXPECT_NEAR(clipped.scale, 0.5f, 1e-6f);
  EXPECT_EQ(cpu::clip_state(1.0, 2.0f).scale, 1.0f);  // below the threshold: untouched
}

TEST(Optimizers, AdamWMatchesTheTorchFormulaOverSeveralSteps) {
  const size_t n = 50;
  auto p = random_floats(n, 12), g = random_floats(n, 13);
  std::vector<float> m(n), v(n);
  std::vector<double> pd(p.begin(), p.end()), md(n), vd(n);
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
  for (int t = 1; t <= 5; ++t) {
    const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
    cpu::adamw_update(n, p.data(), g.data(), m.data(), v.data(), static_cast<float>(lr), static_cast<float>(bc1),
                      static_cast<float>(bc2), 0.5f, static_cast<float>(b1), static_cast<float>(b2),
                      static_cast<float>(eps), static_cast<float>(wd));
    for (size_t i = 0; i < n; ++i) {
      const double gi = g[i] * 0.5;
      pd[i] *= 1 - lr * wd;
      md[i] = b1 * md[i] + (1 - b1) * gi;
      vd[i] = b2 * vd[i] + (1 - b2) * gi * gi;
      pd[i] -= lr * (md[i] / bc1) / (std::sqrt(vd[i] / bc2) + eps);
    }
  }
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(p[i], pd[i], 1e-5);
}

TEST(Optimizers, SgdMomentumMatchesTheTorchFormula) {
  const size_t n = 20;
  auto p = random_floats(n, 14), g = random_floats(n, 15);
  std::vector<float> buf(n);
  std::vector<double> pd(p.begin(), p.end()), bd(n);
  for (int t = 0; t < 4; ++t) {
    cpu::sgd_momentum_update(n, p.data(), g.data(), buf.data(), 0.1f, 1.0f, 0.9f, 0.01f);
    for (size_t i = 0; i < n; ++i) {
      const double gi = g[i] + 0.01 * pd[i];
      bd[i] = 0.9 * bd[i] + gi;
      pd[i] -= 0.1 * bd[i];
    }
  }
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(p[i], pd[i], 1e-5);
}

TEST(Bf16, RoundsToNearestEvenAndWidensExactly) {
  auto bits = [](float x) { return round_to_bf16(x); };
  EXPECT_EQ(bits(1.0f), 0x3f80);
  EXPECT_EQ(bits(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // a tie: to the even neighbour
  EXPECT_EQ(bits(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // a tie: to the even neighbour
  EXPECT_EQ(bits(std::bit_cast<float>(0x3f808001u)), 0x3f81);  // past the tie: up
  EXPECT_EQ(bits(std::bit_cast<float>(0x3f807fffu)), 0x3f80);  // short of the tie: down
  EXPECT_EQ(bits(-2.0f), 0xc000);
  EXPECT_EQ(bits(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // the largest float rounds to infinity
  EXPECT_TRUE(std::isnan(bf16_to_float(bits(std::nanf("")))));
  for (float x : random_floats(1000, 30, -1e6f, 1e6f)) {
    const float r = bf16_to_float(round_to_bf16(x));
    EXPECT_LE(std::abs(r - x), std::abs(x) * 0x1p-8f) << x;  // half an ulp of 8 significant bits
    EXPECT_EQ(round_to_bf16(r), round_to_bf16(x)) << "widening is exact";
  }
}

TEST(CpuBackend, Bf16OperationsAreTheFp32OnesOverRoundedValues) {
  // The CPU's bf16 path is the reference for the GPU's: the product of bf16 operands is exactly the
  // fp32 product of the widened operands; im2col and max-pool over bf16 move rounded values; the
  // bf16 bias/activation output is the rounded fp32 output.
  CpuBackend be(1);
  const int m = 37, n = 29, k = 300;
  const auto af = random_floats(static_cast<size_t>(m) * k, 31), bf = random_floats(static_cast<size_t>(k) * n, 32);
  std::vector<bf16_t> a(af.size()), b(bf.size());
  be.to_bf16(af.data(), af.size(), a.data());
  be.to_bf16(bf.data(), bf.size(), b.data());
  std::vector<float> aw(a.size()), bw(b.size()), c16(static_cast<size_t>(m) * n), c32(c16.size());
  cpu::from_bf16(a.data(), a.size(), aw.data());
  cpu::from_bf16(b.data(), b.size(), bw.data());
  be.gemm_bf16(Transpose::no, Transpose::no, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c16.data(), n);
  be.gemm(Transpose::no, Transpose::no, m, n, k, 1.0f, aw.data(), k, bw.data(), n, 0.0f, c32.data(), n);
  EXPECT_EQ(c16, c32);

  const int imgs = 2, h = 5, w = 6, c = 3;
  const auto x = random_floats(static_cast<size_t>(imgs) * h * w * c, 33);
  std::vector<bf16_t> x16(x.size());
  be.to_bf16(x.data(), x.size(), x16.data());
  std::vector<float> xw(x.size());
  cpu::from_bf16(x16.data(), x16.size(), xw.data());
  std::vector<bf16_t> col16(x.size() * 9), want_col16(x.size() * 9);
  std::vector<float> col(x.size() * 9);
  be.im2col3x3_bf16(imgs, h, w, c, x16.data(), col16.data());
  be.im2col3x3(imgs, h, w, c, xw.data(), col.data());
  cpu::to_bf16(col.data(), col.size(), want_col16.data());
  EXPECT_EQ(col16, want_col16);
  const size_t pooled = static_cast<size_t>(imgs) * (h / 2) * (w / 2) * c;
  std::vector<bf16_t> p16(pooled), want_p16(pooled);
  std::vector<float> p(pooled);
  std::vector<uint8_t> arg16(pooled), arg(pooled);
  be.maxpool2x2_forward_bf16(imgs, h, w, c, x16.data(), p16.data(), arg16.data());
  be.maxpool2x2_forward(imgs, h, w, c, xw.data(), p.data(), arg.data());
  cpu::to_bf16(p.data(), p.size(), want_p16.data());
  EXPECT_EQ(p16, want_p16);
  EXPECT_EQ(arg16, arg);

  for (ActivationFn act : {ActivationFn::none, ActivationFn::relu, ActivationFn::gelu}) {
    auto pre = random_floats(60, 34, -3, 3), pre2 = pre;
    const auto bias = random_floats(6, 35);
    std::vector<bf16_t> out16(60), want16(60);
    std::vector<float> out(60);
    be.bias_activation_forward_bf16(10, 6, bias.data(), act, pre.data(), out16.data());
    be.bias_activation_forward(10, 6, bias.data(), act, pre2.data(), out.data());
    cpu::to_bf16(out.data(), out.size(), want16.data());
    EXPECT_EQ(out16, want16);
    EXPECT_EQ(pre, pre2);
  }
}

TEST(CpuBackend, StepScalarsDriveLossSlotAndOptimizer) {
  CpuBackend be(1);
  StepScalars sc;
  sc.lr = 0.5f;
  sc.loss_slot = 3;
  const std::vector<float> logits = {0, 0};
  const std::vector<int32_t> labels = {1};
  std::vector<float> d(2), row(1), log(5, -1.0f);
  be.softmax_cross_entropy(1, 2, logits.data(), labels.data(), 1.0f, d.data(), row.data());
  be.mean_loss(1, row.data(), log.data(), &sc);
  EXPECT_NEAR(log[3], std::log(2.0), 1e-6);
  EXPECT_EQ(log[2], -1.0f);
  std::vector<float> p = {1.0f}, g = {1.0f}, buf = {0.0f};
  const ClipState clip{0.5f, 0};
  be.sgd_momentum_update(1, p.data(), g.data(), buf.data(), &sc, &clip, 0.0f, 0.0f);
  EXPECT_FLOAT_EQ(p[0], 0.75f);  // 1 - 0.5 * (1 * 0.5)
}

}  // namespace
}  // namespace jobctl::train
