// Gradient accumulation, activation recomputation and bf16 mixed precision on the CPU backend:
//  - accumulation: 4 micro-batches of 32 give the gradient and the trajectory of one batch of 128
//    within the stated fp32 tolerance, and a checkpoint between micro-batches resumes bit-exactly;
//  - recomputation: bit-identical losses and final state to keeping every activation;
//  - bf16: bit-exact resume, and a trajectory close to fp32's;
//  - memory: what model_stats (the VRAM estimate) says a sample costs is what the trainer
//    allocates, byte for byte, in every mode, and recomputation and accumulation reduce it.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "recording_backend.h"
#include "test_util.h"
#include "trainer_steps.h"
#include "train/checkpoint/checkpoint_format.h"
#include "train/data/synthetic.h"
#include "train/kernels/cpu_backend.h"
#include "train/spec/model_stats.h"
#include "train/trainer/trainer.h"

namespace jobctl::train {
namespace {

using testing::run_all;
using testing::run_steps;
using testing::small_spec;

JobSpec with(JobSpec s, Precision p, int accumulate, bool recompute) {
  s.train.precision = p;
  s.train.accumulate_steps = accumulate;
  s.train.recompute = recompute;
  return s;
}

// ---- accumulation -----------------------------------------------------------------------------------

TEST(Accumulation, FourMicroBatchesOf32EqualOneBatchOf128) {
  // Tolerance: the micro-batches add four partial weight-gradient sums instead of forming one;
  // fp32 re-association changes a gradient by a few ulps (relative 1e-5 here). Over 20 AdamW steps
  // such differences stay at the level of lr * 1e-3 per parameter: |dp| <= 2e-5 + 1e-4 |p|; the
  // per-step losses agree to 1e-5 relative.
  for (ModelKind kind : {ModelKind::mlp, ModelKind::cnn}) {
    JobSpec one = small_spec(kind, 64, 1024, 128, 1);
    one.train.lr = 0.003;
    const JobSpec four = with(one, Precision::fp32, 4, false);
    const DataSplits data = make_synthetic(one.data);
    CpuBackend be(1);
    Trainer a(one, be, data.train, data.test), b(four, be, data.train, data.test);
    EXPECT_EQ(b.micro_batch_size(), 32);
    a.step();
    b.step();
    const auto ga = a.network().grad_buffer().to_host(), gb = b.network().grad_buffer().to_host();
    for (size_t i = 0; i < ga.size(); ++i)
      ASSERT_NEAR(gb[i], ga[i], 1e-7 + 1e-5 * std::abs(ga[i])) << "gradient " << i;
    const auto la = run_steps(a, 19), lb = run_steps(b, 19);
    for (size_t i = 0; i < la.size(); ++i) EXPECT_NEAR(lb[i], la[i], 1e-5 * std::abs(la[i])) << "step " << i + 2;
    const auto pa = a.network().param_buffer().to_host(), pb = b.network().param_buffer().to_host();
    for (size_t i = 0; i < pa.size(); ++i) ASSERT_NEAR(pb[i], pa[i], 2e-5 + 1e-4 * std::abs(pa[i])) << "param " << i;
  }
}

// Interrupted after `micro` micro-batches (a checkpoint through its bytes), then resumed.
void expect_bit_exact_resume_at_micro(const JobSpec& spec, int micro) {
  const DataSplits data = make_synthetic(spec.data);
  CpuBackend be(1);
  Trainer straight(spec, be, data.train, data.test);
  const auto all = run_all(straight);
  const auto final_bytes = encode_checkpoint(straight.snapshot());

  Trainer first(spec, be, data.train, data.test);
  std::vector<float> joined;
  for (int i = 0; i < micro; ++i) {
    first.micro_step();
    if (first.micro_index() == 0) joined.push_back(first.last_loss());
  }
  ASSERT_NE(first.micro_index(), 0) << "the checkpoint should fall inside a step";
  const TrainingState mid = first.snapshot();
  EXPECT_EQ(mid.micro_step, first.micro_index());
  auto state = decode_checkpoint(encode_checkpoint(mid));
  ASSERT_TRUE(state) << state.error().message;
  EXPECT_EQ(*state, mid);
  Trainer second(spec, be, data.train, data.test);
  ASSERT_TRUE(second.restore(*state));
  const auto tail = run_all(second);
  joined.insert(joined.end(), tail.begin(), tail.end());
  ASSERT_EQ(joined.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(joined[i]), std::bit_cast<uint32_t>(all[i])) << "loss of step " << i + 1;
  EXPECT_EQ(encode_checkpoint(second.snapshot()), final_bytes) << "final state differs";
}

TEST(Accumulation, ACheckpointBetweenMicroBatchesResumesBitExactly) {
  // 300 samples, batch 32 in micro-batches of 8: the last step of an epoch has 12 samples (8 + 4).
  JobSpec spec = with(small_spec(ModelKind::mlp, 64, 300, 32, 2), Precision::fp32, 4, false);
  expect_bit_exact_resume_at_micro(spec, 4 * 5 + 2);
  expect_bit_exact_resume_at_micro(spec, 4 * 9 + 1);  // inside the short last step (first of two)
  JobSpec cnn = with(small_spec(ModelKind::cnn, 64, 300, 32, 2), Precision::bf16, 3, true);
  cnn.train.optimizer = OptimizerKind::sgd;
  cnn.train.grad_clip = 0.5;
  expect_bit_exact_resume_at_micro(cnn, 3 * 4 + 1);
}

TEST(Accumulation, RefusesACheckpointOutsideTheStepsMicroBatches) {
  JobSpec spec = with(small_spec(ModelKind::mlp), Precision::fp32, 4, false);
  const DataSplits data = make_synthetic(spec.data);
  CpuBackend be(1);
  Trainer t(spec, be, data.train, data.test);
  t.micro_step();
  TrainingState s = t.snapshot();
  TrainingState past = s;
  past.micro_step = 4;
  past.partial_row_losses.resize(32);
  EXPECT_FALSE(t.restore(past));
  TrainingState short_grads = s;
  short_grads.partial_grads.pop_back();
  EXPECT_FALSE(t.restore(short_grads));
  TrainingState boundary = s;
  boundary.micro_step = 0;
  EXPECT_FALSE(t.restore(boundary)) << "a partial gradient at a step boundary";
  EXPECT_TRUE(t.restore(s));
}

// ---- recomputation ----------------------------------------------------------------------------------

TEST(Recompute, GivesBitIdenticalResults) {
  for (ModelKind kind : {ModelKind::mlp, ModelKind::cnn}) {
    for (Precision p : {Precision::fp32, Precision::bf16}) {
      JobSpec spec = with(small_spec(kind, 64, 256, 32, 2), p, kind == ModelKind::cnn ? 2 : 1, false);
      spec.model.hidden = {32, 16};
      // GELU keeps pre-activations (an fp32 ReLU MLP keeps nothing that recomputation could drop).
      if (kind == ModelKind::mlp) spec.model.activation = Activation::gelu;
      const JobSpec re = with(spec, p, spec.train.accumulate_steps, true);
      const DataSplits data = make_synthetic(spec.data);
      CpuBackend be(1);
      Trainer a(spec, be, data.train, data.test), b(re, be, data.train, data.test);
      ASSERT_GT(b.network().activation_plan().segment_ends.size(), 1u) << "nothing is recomputed";
      EXPECT_EQ(run_all(a), run_all(b)) << to_string(kind) << " " << to_string(p);
      EXPECT_EQ(encode_checkpoint(a.snapshot()), encode_checkpoint(b.snapshot()));
      EXPECT_EQ(a.evaluate().loss, b.evaluate().loss);
    }
  }
}

// ---- bf16 -----------------------------------------------------------------------------------------

TEST(Bf16, ResumeIsBitExact) {
  for (ModelKind kind : {ModelKind::mlp, ModelKind::cnn}) {
    const JobSpec spec = with(small_spec(kind, 64, 300, 32, 2), Precision::bf16, 1, false);
    expect_bit_exact_resume_at_micro(with(spec, Precision::bf16, 2, false), 2 * 7 + 1);
    const DataSplits data = make_synthetic(spec.data);
    CpuBackend be(1);
    Trainer straight(spec, be, data.train, data.test);
    const auto all = run_all(straight);
    Trainer first(spec, be, data.train, data.test);
    auto joined = run_steps(first, 11);
    auto state = decode_checkpoint(encode_checkpoint(first.snapshot()));
    ASSERT_TRUE(state);
    Trainer second(spec, be, data.train, data.test);
    ASSERT_TRUE(second.restore(*state));
    const auto tail = run_all(second);
    joined.insert(joined.end(), tail.begin(), tail.end());
    EXPECT_EQ(joined, all);
    EXPECT_EQ(encode_checkpoint(second.snapshot()), encode_checkpoint(straight.snapshot()));
  }
}

TEST(Bf16, TrainsLikeFp32) {
  // bf16 operands carry 8 significant bits: the first losses agree with fp32 to about 1%, and
  // the trained accuracy to a few points on this small synthetic task (the Fashion-MNIST
  // comparison is in the accuracy test).
  JobSpec spec = small_spec(ModelKind::mlp, 32, 2000, 50, 4);
  spec.train.lr = 0.005;
  const JobSpec half = with(spec, Precision::bf16, 1, false);
  const DataSplits data = make_synthetic(spec.data);
  CpuBackend be(1);
  Trainer a(spec, be, data.train, data.test), b(half, be, data.train, data.test);
  const auto la = run_all(a), lb = run_all(b);
  for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(lb[i], la[i], 0.02 * la[i]) << "step " << i + 1;
  EXPECT_NE(la, lb) << "bf16 should round";
  EXPECT_NEAR(b.evaluate().accuracy, a.evaluate().accuracy, 0.03);
}

// ---- memory -----------------------------------------------------------------------------------------

// Bytes the trainer allocates for a spec.
int64_t allocated(const JobSpec& spec, const DataSplits& data) {
  testing::RecordingBackend be;
  Trainer t(spec, be, data.train, data.test);
  return be.live_bytes();
}

TEST(MemoryEstimate, IsWhatTheTrainerAllocates) {
  // Batches of 256 and 512 samples: every buffer is then a multiple of the arena's 256-byte
  // alignment, so the figures are exact.
  for (ModelKind kind : {ModelKind::mlp, ModelKind::cnn}) {
    for (Precision p : {Precision::fp32, Precision::bf16}) {
      for (bool recompute : {false, true}) {
        for (int accumulate : {1, 4}) {
          JobSpec spec = with(small_spec(kind, 64, 1024, 256, 1), p, accumulate, recompute);
          spec.model.hidden = {24, 12};
          const DataSplits data = make_synthetic(spec.data);
          JobSpec wide = spec;
          wide.train.batch_size = 512;
          const ModelStats s = model_stats(spec), sw = model_stats(wide);
          const std::string what = std::string(to_string(kind)) + " " + std::string(to_string(p)) +
                                   (recompute ? " recompute" : "") + " accumulate " + std::to_string(accumulate);
          EXPECT_EQ(allocated(spec, data), s.training_bytes(256)) << what;
          EXPECT_EQ(allocated(wide, data), sw.training_bytes(512)) << what;
        }
      }
    }
  }
}

TEST(MemoryEstimate, RecomputeAndAccumulationShowTheirSavings) {
  auto fashion_cnn = [](Precision p, int accumulate, bool recompute) {
    JobSpec s;
    s.model.kind = ModelKind::cnn;
    s.model.channels = {32, 64};
    s.model.hidden = {128};
    return with(s, p, accumulate, recompute);
  };
  const ModelStats base = model_stats(fashion_cnn(Precision::fp32, 1, false));
  const ModelStats re = model_stats(fashion_cnn(Precision::fp32, 1, true));
  const ModelStats half = model_stats(fashion_cnn(Precision::bf16, 1, false));
  const ModelStats acc = model_stats(fashion_cnn(Precision::fp32, 4, false));
  EXPECT_LT(re.activation_plan.bytes(), base.activation_plan.bytes() * 0.7);
  EXPECT_LT(re.training_bytes(128), base.training_bytes(128));
  EXPECT_GT(re.training_flops_per_sample, base.training_flops_per_sample) << "recomputation costs FLOPs";
  EXPECT_LT(re.training_flops_per_sample, base.training_flops_per_sample * 1.4);
  EXPECT_LT(half.activation_plan.bytes(), base.activation_plan.bytes() * 0.9);
  EXPECT_LT(half.training_bytes(128) - half.weight_copy_bytes, base.training_bytes(128));
  EXPECT_EQ(half.weight_copy_bytes, half.parameters * 2);
  EXPECT_EQ(acc.training_bytes(128) - acc.weight_bytes * 4 - acc.data_bytes - 4 * ((60000 + 127) / 128),
            acc.activation_bytes_per_sample * 32 + acc.step_bytes_per_sample * 128);
}

}  // namespace
}  // namespace jobctl::train
