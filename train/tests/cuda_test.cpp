// The CUDA path, held to the CPU reference (cpu_ops.h through CpuBackend) kernel by kernel with
// the tolerance stated at each check (every launch path: vectorised and scalar, one block and
// chunked, more than 1024 reduction blocks; bf16 kernels included), then whole training runs in
// fp32 and bf16, with gradient accumulation and recomputation: determinism, graph replay equal to
// eager execution, two trainers on one backend, bit-exact resume in one process (also between
// micro-batches) and across processes after a real SIGTERM, and `--device auto` choosing the GPU.
//
// Every test skips with "no CUDA device" on a machine without a GPU or in a build without CUDA.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "process_util.h"
#include "test_util.h"
#include "trainer_steps.h"
#include "train/checkpoint/checkpoint_format.h"
#include "train/data/synthetic.h"
#include "train/kernels/bf16.h"
#include "train/kernels/cpu_backend.h"
#include "train/kernels/cpu_ops.h"
#include "train/kernels/gemm.h"
#include "train/kernels/make_backend.h"
#include "train/tensor/device_buffer.h"
#include "train/trainer/trainer.h"
#ifdef JOBCTL_HAVE_CUDA
#include "train/kernels/cuda_backend.h"
#endif

namespace jobctl::train {
namespace {

using testing::random_floats;
using testing::random_labels;

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_built()) GTEST_SKIP() << "no CUDA device (this build has no CUDA support)";
    if (cuda_devices() == 0) GTEST_SKIP() << "no CUDA device";
    auto be = make_backend(DeviceChoice::cuda);
    ASSERT_TRUE(be) << be.error().message;
    gpu = std::move(*be);
  }

  template <class T>
  DeviceBuffer<T> up(const std::vector<T>& v) {
    DeviceBuffer<T> b(*gpu, v.size());
    b.upload(v);
    return b;
  }
  template <class T>
  static std::vector<T> down(const DeviceBuffer<T>& b) {
    return b.to_host();
  }

  std::unique_ptr<Backend> gpu;
  CpuBackend cpu{1};
};

// |got - want| <= atol + rtol * |want|, element by element.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(static_cast<double>(got[i]) - want[i]), atol + rtol * std::abs(static_cast<double>(want[i])))
        << what << " at " << i << ": gpu " << got[i] << " cpu " << want[i];
}

TEST_F(CudaTest, GemmMatchesTheReference) {
  // Tolerance: relative 1e-5 of k (fp32 sums of k products of values in [-1, 1]).
  struct Case {
    Transpose ta, tb;
    int m, n, k;
    float beta;
  };
  for (const Case& c : {Case{Transpose::no, Transpose::no, 33, 17, 65, 0.0f}, Case{Transpose::no, Transpose::yes, 128, 256, 784, 0.0f},
                        Case{Transpose::yes, Transpose::no, 256, 784, 128, 0.0f}, Case{Transpose::yes, Transpose::yes, 7, 9, 11, 0.5f}}) {
    const int lda = c.ta == Transpose::yes ? c.m : c.k, ldb = c.tb == Transpose::yes ? c.k : c.n;
    auto a = random_floats(static_cast<size_t>(c.m) * c.k, 1), b = random_floats(static_cast<size_t>(c.k) * c.n, 2);
    auto c0 = random_floats(static_cast<size_t>(c.m) * c.n, 3);
    auto da = up(a), db = up(b), dc = up(c0);
    gpu->gemm(c.ta, c.tb, c.m, c.n, c.k, 1.0f, da.data(), lda, db.data(), ldb, c.beta, dc.data(), c.n);
    auto want = c0;
    gemm_reference(c.ta, c.tb, c.m, c.n, c.k, 1.0f, a.data(), lda, b.data(), ldb, c.beta, want.data(), c.n);
    expect_close(down(dc), want, 1e-5 * c.k, 0, "gemm");
  }
}

TEST_F(CudaTest, Bf16GemmMatchesTheCpuReference) {
  // Both sides multiply the same bf16 operands exactly and accumulate in fp32, in different
  // orders: within 1e-5 * k relative to the operands' scale, as the fp32 products.
  struct Case {
    Transpose ta, tb;
    int m, n, k;
    float beta;
  };
  for (const Case& c : {Case{Transpose::no, Transpose::yes, 128, 256, 784, 0.0f}, Case{Transpose::yes, Transpose::no, 256, 784, 128, 1.0f},
                        Case{Transpose::no, Transpose::no, 33, 17, 65, 0.0f}, Case{Transpose::no, Transpose::yes, 1024, 4096, 4096, 0.0f}}) {
    const int lda = c.ta == Transpose::yes ? c.m : c.k, ldb = c.tb == Transpose::yes ? c.k : c.n;
    const auto af = random_floats(static_cast<size_t>(c.m) * c.k, 21), bf = random_floats(static_cast<size_t>(c.k) * c.n, 22);
    std::vector<bf16_t> a(af.size()), b(bf.size());
    cpu::to_bf16(af.data(), af.size(), a.data());
    cpu::to_bf16(bf.data(), bf.size(), b.data());
    auto c0 = random_floats(static_cast<size_t>(c.m) * c.n, 23);
    auto da = up(a), db = up(b);
    auto dc = up(c0);
    gpu->gemm_bf16(c.ta, c.tb, c.m, c.n, c.k, 1.0f, da.data(), lda, db.data(), ldb, c.beta, dc.data(), c.n);
    auto want = c0;
    cpu.gemm_bf16(c.ta, c.tb, c.m, c.n, c.k, 1.0f, a.data(), lda, b.data(), ldb, c.beta, want.data(), c.n);
    expect_close(down(dc), want, 1e-5 * c.k, 0, "gemm_bf16");
  }
}

TEST_F(CudaTest, Bf16KernelsMatchTheCpuReference) {
  // Rounding: bit-identical (round to nearest even on both sides), ties and extremes included.
  std::vector<float> x = random_floats(100003, 24, -1e4f, 1e4f);
  for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu, 0x00000001u, 0x80000000u, 0x7f800000u})
    x.push_back(std::bit_cast<float>(bits));
  auto dx = up(x);
  DeviceBuffer<bf16_t> d16(*gpu, x.size());
  gpu->to_bf16(dx.data(), x.size(), d16.data());
  std::vector<bf16_t> want(x.size());
  cpu::to_bf16(x.data(), x.size(), want.data());
  EXPECT_EQ(down(d16), want);

  // Bias + activation into bf16: exact for none/ReLU; GELU within one bf16 step (erff vs erf can
  // move a value across a rounding boundary).
  const int rows = 300, cols = 37;
  for (ActivationFn act : {ActivationFn::none, ActivationFn::relu, ActivationFn::gelu}) {
    auto pre = random_floats(static_cast<size_t>(rows) * cols, 25, -3, 3);
    auto bias = random_floats(static_cast<size_t>(cols), 26);
    auto dpre = up(pre), dbias = up(bias);
    DeviceBuffer<bf16_t> dout(*gpu, pre.size());
    gpu->bias_activation_forward_bf16(rows, cols, dbias.data(), act, dpre.data(), dout.data());
    std::vector<bf16_t> out(pre.size());
    cpu::bias_activation_forward_bf16(rows, cols, bias.data(), act, pre.data(), out.data());
    const auto got = down(dout);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::abs(static_cast<int>(got[i]) - static_cast<int>(out[i])), act == ActivationFn::gelu ? 1 : 0) << i;
    expect_close(down(dpre), pre, act == ActivationFn::gelu ? 0 : 0, 0, "pre");
  }

  // im2col and max-pool over bf16 move values: exact.
  const int n = 3, h = 7, w = 6;
  for (int c : {1, 5, 16}) {
    const auto inf = random_floats(static_cast<size_t>(n) * h * w * c, 27);
    std::vector<bf16_t> in(inf.size());
    cpu::to_bf16(inf.data(), inf.size(), in.data());
    auto din = up(in);
    DeviceBuffer<bf16_t> dcol(*gpu, in.size() * 9);
    gpu->im2col3x3_bf16(n, h, w, c, din.data(), dcol.data());
    std::vector<bf16_t> col(in.size() * 9);
    cpu::im2col3x3_bf16(n, h, w, c, in.data(), col.data());
    EXPECT_EQ(down(dcol), col);
    const size_t pooled = static_cast<size_t>(n) * (h / 2) * (w / 2) * c;
    DeviceBuffer<bf16_t> dpool(*gpu, pooled);
    DeviceBuffer<uint8_t> darg(*gpu, pooled);
    gpu->maxpool2x2_forward_bf16(n, h, w, c, din.data(), dpool.data(), darg.data());
    std::vector<bf16_t> pool(pooled);
    std::vector<uint8_t> arg(pooled);
    cpu::maxpool2x2_forward_bf16(n, h, w, c, in.data(), pool.data(), arg.data());
    EXPECT_EQ(down(dpool), pool);
    EXPECT_EQ(down(darg), arg);
  }
}

TEST_F(CudaTest, GathersAreExact) {
  auto src = random_floats(50 * 12, 4);
  std::vector<int32_t> idx = {49, 0, 7, 7, 23};
  auto labels = random_labels(50, 10, 5);
  auto ds = up(src);
  auto di = up(idx);
  auto dl = up(labels);
  DeviceBuffer<float> out(*gpu, 5 * 12);
  DeviceBuffer<int32_t> lout(*gpu, 5);
  gpu->gather_rows(ds.data(), 12, di.data(), 5, out.data());
  gpu->gather_labels(dl.data(), di.data(), 5, lout.data());
  std::vector<float> want(5 * 12);
  std::vector<int32_t> lwant(5);
  cpu::gather_rows(src.data(), 12, idx.data(), 5, want.data());
  cpu::gather_labels(labels.data(), idx.data(), 5, lwant.data());
  EXPECT_EQ(down(out), want);
  EXPECT_EQ(down(lout), lwant);
  // The scalar path: a width that is not a multiple of 4, and a destination off 16-byte alignment.
  auto src13 = random_floats(50 * 13, 28);
  auto ds13 = up(src13);
  DeviceBuffer<float> out13(*gpu, 5 * 13 + 1);
  gpu->gather_rows(ds13.data(), 13, di.data(), 5, out13.data() + 1);
  std::vector<float> want13(5 * 13);
  cpu::gather_rows(src13.data(), 13, idx.data(), 5, want13.data());
  auto got13 = down(out13);
  EXPECT_EQ(std::vector<float>(got13.begin() + 1, got13.end()), want13);
  DeviceBuffer<float> out12(*gpu, 5 * 12 + 1);
  gpu->gather_rows(ds.data(), 12, di.data(), 5, out12.data() + 1);  // width % 4 == 0, unaligned
  auto got12 = down(out12);
  EXPECT_EQ(std::vector<float>(got12.begin() + 1, got12.end()), want);
}

TEST_F(CudaTest, BiasActivationForwardAndBackward) {
  // Forward: exact for none/ReLU (one add, one select); GELU within 2e-6 + 1e-5 relative
  // (erff differs from glibc's erf by an ulp or two). Backward: d(pre) likewise; the bias
  // gradient is a sum over rows in another order: within 1e-5 * rows. Rows from one chunk (the
  // direct path) to many (the chunked path, also for 10 columns); accumulation adds to dbias.
  for (int rows : {5, 64, 128, 1024, 10000}) {
    for (int cols : {10, 16, 37, 256}) {
      if (rows >= 1024 && cols > 37) continue;
      for (ActivationFn act : {ActivationFn::none, ActivationFn::relu, ActivationFn::gelu}) {
        const std::string what = "rows " + std::to_string(rows) + " cols " + std::to_string(cols) + " act " +
                                 std::to_string(static_cast<int>(act));
        auto pre = random_floats(static_cast<size_t>(rows) * cols, 6, -2, 2);
        auto bias = random_floats(static_cast<size_t>(cols), 7);
        auto dout = random_floats(pre.size(), 8);
        auto dpre_d = up(pre), db_d = up(bias), dout_d = up(dout);
        DeviceBuffer<float> out_d(*gpu, pre.size()), dp_d(*gpu, pre.size()), dbias_d(*gpu, static_cast<size_t>(cols));
        gpu->bias_activation_forward(rows, cols, db_d.data(), act, dpre_d.data(), out_d.data());
        std::vector<float> out(pre.size());
        cpu::bias_activation_forward(rows, cols, bias.data(), act, pre.data(), out.data());
        const double atol = act == ActivationFn::gelu ? 2e-6 : 0.0, rtol = act == ActivationFn::gelu ? 1e-5 : 0.0;
        expect_close(down(dpre_d), pre, 0, 0, what + " pre");
        expect_close(down(out_d), out, atol, rtol, what + " out");
        gpu->bias_activation_backward(rows, cols, act, dpre_d.data(), dout_d.data(), dp_d.data(), dbias_d.data(), false);
        std::vector<float> dp(pre.size()), dbias(static_cast<size_t>(cols));
        cpu::bias_activation_backward(rows, cols, act, pre.data(), dout.data(), dp.data(), dbias.data(), false);
        expect_close(down(dp_d), dp, atol, rtol, what + " dpre");
        expect_close(down(dbias_d), dbias, 1e-5 * rows, 0, what + " dbias");
        gpu->bias_activation_backward(rows, cols, act, dpre_d.data(), dout_d.data(), dp_d.data(), dbias_d.data(), true);
        cpu::bias_activation_backward(rows, cols, act, pre.data(), dout.data(), dp.data(), dbias.data(), true);
        expect_close(down(dbias_d), dbias, 2e-5 * rows, 0, what + " dbias accumulated");
      }
    }
  }
}

TEST_F(CudaTest, SoftmaxCrossEntropyAndEval) {
  // Gradients within 1e-6 absolute (they are probabilities / rows), row losses and the mean
  // within 1e-5 relative; eval correctness flags exact, ties included. Batches from a few rows
  // to more than one block's worth of warps (rows spread over many blocks).
  for (auto [rows, classes] : {std::pair{128, 10}, std::pair{1000, 100}, std::pair{3, 37}, std::pair{4099, 10}}) {
    auto logits = random_floats(static_cast<size_t>(rows) * classes, 9, -5, 5);
    for (int r = 0; r < rows; r += 7) logits[static_cast<size_t>(r) * classes + 1] = logits[static_cast<size_t>(r) * classes];  // ties
    auto labels = random_labels(static_cast<size_t>(rows), classes, 10);
    StepScalars sc;
    sc.loss_slot = 2;
    std::vector<uint8_t> sc_bytes(sizeof sc);
    std::memcpy(sc_bytes.data(), &sc, sizeof sc);
    auto dsc = up(sc_bytes);
    auto dl = up(logits);
    auto dy = up(labels);
    DeviceBuffer<float> dd(*gpu, logits.size()), drow(*gpu, static_cast<size_t>(rows)), dlog(*gpu, 4),
        dcorrect(*gpu, static_cast<size_t>(rows));
    const float scale = 1.0f / static_cast<float>(rows);
    gpu->softmax_cross_entropy(rows, classes, dl.data(), dy.data(), scale, dd.data(), drow.data());
    gpu->mean_loss(rows, drow.data(), dlog.data(), reinterpret_cast<const StepScalars*>(dsc.data()));
    std::vector<float> d(logits.size()), row(static_cast<size_t>(rows)), log(4, 0.0f);
    cpu.softmax_cross_entropy(rows, classes, logits.data(), labels.data(), scale, d.data(), row.data());
    cpu.mean_loss(rows, row.data(), log.data(), &sc);
    expect_close(down(dd), d, 1e-6, 0, "dlogits");
    expect_close(down(drow), row, 1e-6, 1e-5, "row loss");
    expect_close(down(dlog), log, 0, 1e-5, "mean loss in slot 2, zeros elsewhere");
    gpu->softmax_cross_entropy_eval(rows, classes, dl.data(), dy.data(), drow.data(), dcorrect.data());
    std::vector<float> correct(static_cast<size_t>(rows));
    cpu::softmax_cross_entropy_eval(rows, classes, logits.data(), labels.data(), row.data(), correct.data());
    EXPECT_EQ(down(dcorrect), correct);
    expect_close(down(drow), row, 1e-6, 1e-5, "eval row loss");
  }
}

TEST_F(CudaTest, ConvolutionHelpersAndPooling) {
  // im2col and pooling move values: exact. col2im adds up to 9 values in the same order as the
  // CPU: within 1e-6 relative.
  const int n = 3, h = 7, w = 6;
  for (int c : {1, 5, 16}) {
    auto in = random_floats(static_cast<size_t>(n) * h * w * c, 11);
    auto din = up(in);
    DeviceBuffer<float> dcol(*gpu, in.size() * 9);
    gpu->im2col3x3(n, h, w, c, din.data(), dcol.data());
    std::vector<float> col(in.size() * 9);
    cpu::im2col3x3(n, h, w, c, in.data(), col.data());
    EXPECT_EQ(down(dcol), col);
    auto g = random_floats(col.size(), 12);
    auto dg = up(g);
    DeviceBuffer<float> dback(*gpu, in.size());
    gpu->col2im3x3(n, h, w, c, dg.data(), dback.data());
    std::vector<float> back(in.size());
    cpu::col2im3x3(n, h, w, c, g.data(), back.data());
    expect_close(down(dback), back, 1e-7, 1e-6, "col2im");

    const size_t pooled = static_cast<size_t>(n) * (h / 2) * (w / 2) * c;
    DeviceBuffer<float> dout(*gpu, pooled);
    DeviceBuffer<uint8_t> darg(*gpu, pooled);
    gpu->maxpool2x2_forward(n, h, w, c, din.data(), dout.data(), darg.data());
    std::vector<float> out(pooled);
    std::vector<uint8_t> arg(pooled);
    cpu::maxpool2x2_forward(n, h, w, c, in.data(), out.data(), arg.data());
    EXPECT_EQ(down(dout), out);
    EXPECT_EQ(down(darg), arg);
    auto up_grad = random_floats(pooled, 13);
    auto dup = up(up_grad);
    DeviceBuffer<float> dpin(*gpu, in.size());
    gpu->maxpool2x2_backward(n, h, w, c, dup.data(), darg.data(), dpin.data());
    std::vector<float> pin(in.size());
    cpu::maxpool2x2_backward(n, h, w, c, up_grad.data(), arg.data(), pin.data());
    EXPECT_EQ(down(dpin), pin);
  }
}

TEST_F(CudaTest, GlobalNormClipAndOptimizers) {
  // Norm within 1e-5 relative of the double CPU sum; two runs bit-identical (fixed-order
  // reduction); AdamW (parameters and both moments) and SGD (parameters and momentum) within
  // 1e-6 + 1e-5 relative after three steps. 3,000,001 elements need more than 1024 blocks of the
  // first reduction pass; offset by one element, the optimizers take their unaligned path.
  for (size_t n : {size_t{1001}, size_t{235146}, size_t{3000001}}) {
    auto g = random_floats(n, 14);
    auto dg = up(g);
    DeviceBuffer<ClipState> dclip(*gpu, 1);
    gpu->clip_by_global_norm(dg.data(), n, 0.5f, dclip.data());
    const ClipState a = dclip.to_host()[0];
    gpu->clip_by_global_norm(dg.data(), n, 0.5f, dclip.data());
    const ClipState b = dclip.to_host()[0];
    EXPECT_EQ(std::bit_cast<uint32_t>(a.norm), std::bit_cast<uint32_t>(b.norm));
    const ClipState want = cpu::clip_state(cpu::sum_of_squares(g.data(), n), 0.5f);
    EXPECT_NEAR(a.norm, want.norm, 1e-5 * want.norm);
    EXPECT_NEAR(a.scale, want.scale, 1e-5 * want.scale);

    for (size_t offset : {size_t{0}, size_t{1}}) {
    auto p = random_floats(n, 15);
    std::vector<float> m(n + offset), v(n + offset), buf(n + offset);
    std::vector<float> p_padded(offset, 0.0f);
    p_padded.insert(p_padded.end(), p.begin(), p.end());
    std::vector<float> g_padded(offset, 0.0f);
    g_padded.insert(g_padded.end(), g.begin(), g.end());
    auto dp_all = up(p_padded), dm_all = up(m), dv_all = up(v), dp2_all = up(p_padded), dbuf_all = up(buf),
         dg_all = up(g_padded);
    m.resize(n);
    v.resize(n);
    buf.resize(n);
    struct View {
      DeviceBuffer<float>& b;
      size_t off;
      float* data() { return b.data() + off; }
    };
    View dp{dp_all, offset}, dm{dm_all, offset}, dv{dv_all, offset}, dp2{dp2_all, offset}, dbuf{dbuf_all, offset},
        dgv{dg_all, offset};
    auto tail = [&](const DeviceBuffer<float>& buffer) {
      const auto all = down(buffer);
      return std::vector<float>(all.begin() + static_cast<std::ptrdiff_t>(offset), all.end());
    };
    auto p2 = p;
    for (int t = 1; t <= 3; ++t) {
      StepScalars sc;
      sc.lr = 0.01f;
      sc.bias_correction1 = static_cast<float>(1 - std::pow(0.9, t));
      sc.bias_correction2 = static_cast<float>(1 - std::pow(0.999, t));
      std::vector<uint8_t> bytes(sizeof sc);
      std::memcpy(bytes.data(), &sc, sizeof sc);
      auto dsc = up(bytes);
      const auto* s = reinterpret_cast<const StepScalars*>(dsc.data());
      gpu->adamw_update(n, dp.data(), dgv.data(), dm.data(), dv.data(), s, dclip.data(), 0.9f, 0.999f, 1e-8f, 0.01f);
      gpu->sgd_momentum_update(n, dp2.data(), dgv.data(), dbuf.data(), s, dclip.data(), 0.9f, 0.01f);
      cpu::adamw_update(n, p.data(), g.data(), m.data(), v.data(), sc.lr, sc.bias_correction1, sc.bias_correction2,
                        a.scale, 0.9f, 0.999f, 1e-8f, 0.01f);
      cpu::sgd_momentum_update(n, p2.data(), g.data(), buf.data(), sc.lr, a.scale, 0.9f, 0.01f);
    }
    const std::string at = " (n " + std::to_string(n) + ", offset " + std::to_string(offset) + ")";
    expect_close(tail(dp_all), p, 1e-6, 1e-5, "adamw params" + at);
    expect_close(tail(dm_all), m, 1e-7, 1e-5, "adamw m" + at);
    expect_close(tail(dv_all), v, 1e-9, 1e-5, "adamw v" + at);
    expect_close(tail(dp2_all), p2, 1e-6, 1e-5, "sgd params" + at);
    expect_close(tail(dbuf_all), buf, 1e-6, 1e-5, "sgd momentum" + at);
    }
  }
}

JobSpec cuda_spec(ModelKind kind) {
  JobSpec s = testing::small_spec(kind, kind == ModelKind::cnn ? 256 : 784, 3000, 64, 2);
  s.model.hidden = {128};
  if (kind == ModelKind::cnn) s.model.channels = {8, 16};
  s.train.grad_clip = 1.0;
  s.train.lr = 0.002;
  return s;
}

JobSpec with_mode(JobSpec s, Precision p, int accumulate, bool recompute) {
  s.train.precision = p;
  s.train.accumulate_steps = accumulate;
  s.train.recompute = recompute;
  return s;
}

// fp32; bf16; bf16 with 4 micro-batches and recomputation.
std::vector<JobSpec> cuda_specs(ModelKind kind) {
  const JobSpec s = cuda_spec(kind);
  return {s, with_mode(s, Precision::bf16, 1, false), with_mode(s, Precision::bf16, 4, true)};
}

std::string mode_of(const JobSpec& s) {
  return std::string(to_string(s.model.kind)) + " " + std::string(to_string(s.train.precision)) + " accumulate " +
         std::to_string(s.train.accumulate_steps) + (s.train.recompute ? " recompute" : "");
}

TEST_F(CudaTest, TrainingIsDeterministicGraphsEqualEagerAndMatchesTheCpu) {
#ifdef JOBCTL_HAVE_CUDA
  for (ModelKind kind : {ModelKind::mlp, ModelKind::cnn})
  for (const JobSpec& spec : cuda_specs(kind)) {
    SCOPED_TRACE(mode_of(spec));
    const DataSplits data = make_synthetic(spec.data);
    auto eager = make_cuda_backend(CudaBackendOptions{0, false});
    Trainer a(spec, *gpu, data.train, data.test), b(spec, *gpu, data.train, data.test),
        c(spec, *eager, data.train, data.test), d(spec, cpu, data.train, data.test);
    const auto la = testing::run_steps(a, 60), lb = testing::run_steps(b, 60), lc = testing::run_steps(c, 60),
               ld = testing::run_steps(d, 60);
    EXPECT_EQ(la, lb) << "two CUDA runs differ";
    EXPECT_EQ(la, lc) << "graph replay differs from eager execution";
    EXPECT_EQ(encode_checkpoint(a.snapshot()), encode_checkpoint(c.snapshot()));
    // Against the CPU: the same computation (bf16 rounded the same way) in another summation
    // order. Early losses agree to 1e-3 relative (bf16: 1e-2, a different fp32 sum can round an
    // operand to the other bf16 neighbour); later ones drift apart slowly as rounding
    // differences compound.
    const double rel = spec.train.precision == Precision::bf16 ? 1e-2 : 1e-3;
    for (size_t i = 0; i < 10; ++i) EXPECT_NEAR(la[i], ld[i], rel * std::abs(ld[i])) << "step " << i + 1;
    const EvalResult ea = a.evaluate(), ed = d.evaluate();
    EXPECT_NEAR(ea.accuracy, ed.accuracy, 0.03);
  }
#endif
}

TEST_F(CudaTest, TwoTrainersOnOneBackendAndRecomputation) {
  // Trainers stepped in turn on one backend each replay their own graphs (a graph keyed by the
  // step alone would run the other's buffers), and recomputation is bit-identical on the GPU too.
  for (ModelKind kind : {ModelKind::mlp, ModelKind::cnn}) {
    for (Precision p : {Precision::fp32, Precision::bf16}) {
      JobSpec spec = with_mode(cuda_spec(kind), p, 1, false);
      JobSpec other = spec;
      other.train.seed = 77;
      const DataSplits data = make_synthetic(spec.data);
      std::vector<float> solo_a, solo_b, la, lb, lr;
      {
        Trainer a(spec, *gpu, data.train, data.test);
        solo_a = testing::run_steps(a, 40);
      }
      {
        Trainer b(other, *gpu, data.train, data.test);
        solo_b = testing::run_steps(b, 40);
      }
      Trainer a(spec, *gpu, data.train, data.test), b(other, *gpu, data.train, data.test),
          r(with_mode(spec, p, 1, true), *gpu, data.train, data.test);
      for (int i = 0; i < 40; ++i) {
        la.push_back(testing::run_steps(a, 1)[0]);
        lb.push_back(testing::run_steps(b, 1)[0]);
        lr.push_back(testing::run_steps(r, 1)[0]);
      }
      EXPECT_EQ(la, solo_a) << mode_of(spec);
      EXPECT_EQ(lb, solo_b) << mode_of(spec);
      EXPECT_EQ(lr, solo_a) << mode_of(spec) << " with recomputation";
      EXPECT_EQ(encode_checkpoint(a.snapshot()), encode_checkpoint(r.snapshot()));
    }
  }
}

TEST_F(CudaTest, ResumeInProcessIsBitExact) {
  for (ModelKind kind : {ModelKind::mlp, ModelKind::cnn})
  for (JobSpec spec : cuda_specs(kind)) {
    SCOPED_TRACE(mode_of(spec));
    if (kind == ModelKind::cnn) spec.train.optimizer = OptimizerKind::sgd;
    const DataSplits data = make_synthetic(spec.data);
    Trainer straight(spec, *gpu, data.train, data.test);
    const auto all = testing::run_steps(straight, 1 << 20);
    const auto final_bytes = encode_checkpoint(straight.snapshot());
    Trainer first(spec, *gpu, data.train, data.test);
    auto joined = testing::run_steps(first, 37);
    // With micro-batches, stop inside the next step.
    for (int i = 1; i < spec.train.accumulate_steps && i < 3; ++i) first.micro_step();
    auto state = decode_checkpoint(encode_checkpoint(first.snapshot()));
    ASSERT_TRUE(state);
    Trainer second(spec, *gpu, data.train, data.test);
    ASSERT_TRUE(second.restore(*state));
    const auto tail = testing::run_steps(second, 1 << 20);
    joined.insert(joined.end(), tail.begin(), tail.end());
    EXPECT_EQ(joined, all);
    EXPECT_EQ(encode_checkpoint(second.snapshot()), final_bytes);
  }
}

// Across processes, with a real SIGTERM, as the CPU integration test does.
TEST_F(CudaTest, ProcessResumeAfterSigtermIsBitExactAndAutoPicksCuda) {
  if (testing::train_binary().empty()) GTEST_SKIP() << "JOBCTL_TRAIN_BIN is not set";
  testing::TempDir dir("cuda-resume");
  // 1024 steps per epoch, 2 epochs: enough GPU steps that the signal lands mid-run.
  testing::write_text(dir.file("spec.json"), R"({
    "model": {"kind": "mlp", "hidden": [256, 128]},
    "data": {"dataset": "synthetic", "samples": 65536, "test_samples": 1000, "features": 784, "seed": 4},
    "train": {"epochs": 2, "batch_size": 64, "grad_clip": 1.0, "warmup_steps": 50},
    "checkpoint": {"every_steps": 0}
  })");
  auto run = [&](const std::string& out, std::vector<std::string> extra, int stop_after,
                 std::map<int64_t, double>& losses, std::string* device) {
    std::vector<std::string> args = {"--spec", dir.file("spec.json"), "--out", dir.file(out), "--device", "auto"};
    args.insert(args.end(), extra.begin(), extra.end());
    testing::TrainProcess p(args);
    std::string status;
    bool sent = false;
    while (auto e = p.next()) {
      const std::string ev = testing::event_of(*e);
      if (ev == "start" && device) *device = e->find("device")->as_string();
      if (ev == "progress") {
        losses[e->find("step")->as_int()] = e->find("loss")->as_double();
        if (stop_after > 0 && !sent && e->find("step")->as_int() >= stop_after) {
          p.signal(SIGTERM);
          sent = true;
        }
      }
      if (ev == "done") status = e->find("status")->as_string();
    }
    EXPECT_EQ(p.wait(), 0);
    return status;
  };
  std::map<int64_t, double> full, part;
  std::string device;
  ASSERT_EQ(run("straight", {}, 0, full, &device), "succeeded");
  EXPECT_EQ(device, "cuda") << "--device auto must choose the GPU";
  ASSERT_EQ(full.size(), 2048u);
  ASSERT_EQ(run("split", {}, 200, part, nullptr), "interrupted");
  ASSERT_EQ(run("split", {"--resume", "auto"}, 0, part, nullptr), "succeeded");
  EXPECT_EQ(part, full);
  EXPECT_TRUE(testing::read_bytes(dir.file("straight/final.ckpt")) == testing::read_bytes(dir.file("split/final.ckpt")));
}

}  // namespace
}  // namespace jobctl::train
