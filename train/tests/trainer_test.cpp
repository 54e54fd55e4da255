// The trainer and the training loop in one process: determinism, bit-exact resume from a
// snapshot (through the checkpoint bytes), refusal of foreign checkpoints, the learning-rate
// schedules, learning on synthetic data, and the loop's checkpoint cadence, signals and events on
// an in-memory file system with a manual clock.
#include <gtest/gtest.h>

#include <cmath>

#include "base/clock.h"
#include "test_util.h"
#include "trainer_steps.h"
#include "train/checkpoint/checkpoint_format.h"
#include "train/checkpoint/memory_file_system.h"
#include "train/data/synthetic.h"
#include "train/kernels/cpu_backend.h"
#include "train/optim/lr_schedule.h"
#include "train/spec/json.h"
#include "train/trainer/trainer.h"
#include "train/trainer/training_run.h"

namespace jobctl::train {
namespace {

using testing::run_steps;
using testing::small_spec;

void expect_bit_exact_resume(const JobSpec& spec, int split) {
  const DataSplits data = make_synthetic(spec.data);
  CpuBackend be(1);
  Trainer straight(spec, be, data.train, data.test);
  const int total = static_cast<int>(straight.total_steps());
  ASSERT_GT(total, split);
  const auto all = run_steps(straight, total);
  const auto final_bytes = encode_checkpoint(straight.snapshot());

  Trainer first(spec, be, data.train, data.test);
  auto head = run_steps(first, split);
  const auto ckpt = encode_checkpoint(first.snapshot());
  auto state = decode_checkpoint(ckpt);
  ASSERT_TRUE(state);
  Trainer second(spec, be, data.train, data.test);  // fresh weights, then the checkpoint
  ASSERT_TRUE(second.restore(*state));
  const auto tail = run_steps(second, total);
  head.insert(head.end(), tail.begin(), tail.end());
  ASSERT_EQ(head.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(head[i]), std::bit_cast<uint32_t>(all[i])) << "loss of step " << i + 1;
  EXPECT_EQ(encode_checkpoint(second.snapshot()), final_bytes) << "final state differs";
}

TEST(Trainer, SameSpecSameBits) {
  const JobSpec spec = small_spec(ModelKind::mlp);
  const DataSplits data = make_synthetic(spec.data);
  CpuBackend be(1);
  Trainer a(spec, be, data.train, data.test), b(spec, be, data.train, data.test);
  EXPECT_EQ(run_steps(a, 25), run_steps(b, 25));
  EXPECT_EQ(encode_checkpoint(a.snapshot()), encode_checkpoint(b.snapshot()));
}

TEST(Trainer, BitsDoNotDependOnTheCpuThreadCount) {
  // The host kernels and the matrix products split their work into chunks fixed by the sizes, so
  // one thread and two give the same bits (a checkpoint resumes on a machine with other cores).
  for (ModelKind kind : {ModelKind::mlp, ModelKind::cnn}) {
    JobSpec spec = small_spec(kind, 256, 512, 128, 1);
    spec.model.hidden = {256};
    if (kind == ModelKind::cnn) spec.model.channels = {16, 32};
    const DataSplits data = make_synthetic(spec.data);
    std::vector<uint8_t> bytes[2];
    std::vector<float> losses[2];
    for (int threads : {1, 2}) {
      CpuBackend be(threads);
      Trainer t(spec, be, data.train, data.test);
      losses[threads - 1] = run_steps(t, 4);
      bytes[threads - 1] = encode_checkpoint(t.snapshot());
    }
    EXPECT_EQ(losses[0], losses[1]) << to_string(kind);
    EXPECT_EQ(bytes[0], bytes[1]) << to_string(kind);
  }
}

TEST(Trainer, ResumeIsBitExactMlpAdamW) { expect_bit_exact_resume(small_spec(ModelKind::mlp), 21); }

TEST(Trainer, ResumeIsBitExactAtAnEpochBoundary) {
  const JobSpec spec = small_spec(ModelKind::mlp);  // 512 samples / 32 = 16 steps per epoch
  expect_bit_exact_resume(spec, 16);
}

TEST(Trainer, ResumeIsBitExactCnnSgdWithClippingAndStepSchedule) {
  JobSpec spec = small_spec(ModelKind::cnn, 64, 300, 32);  // last batch of an epoch is short (300 % 32)
  spec.train.optimizer = OptimizerKind::sgd;
  spec.train.grad_clip = 0.5;
  spec.train.schedule = ScheduleKind::step;
  spec.train.step_epochs = 1;
  spec.train.warmup_steps = 5;
  spec.model.activation = Activation::gelu;
  expect_bit_exact_resume(spec, 13);
}

TEST(Trainer, RefusesACheckpointFromAnotherSpec) {
  const JobSpec spec = small_spec(ModelKind::mlp);
  const DataSplits data = make_synthetic(spec.data);
  CpuBackend be(1);
  Trainer t(spec, be, data.train, data.test);
  run_steps(t, 3);
  const TrainingState s = t.snapshot();

  JobSpec other = spec;
  other.train.lr = 0.02;  // changes the fingerprint
  Trainer u(other, be, data.train, data.test);
  auto st = u.restore(s);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, ErrorCode::checkpoint_mismatch);

  TrainingState wrong_layout = s;
  wrong_layout.layout_hash ^= 1;
  EXPECT_FALSE(t.restore(wrong_layout));
  TrainingState short_losses = s;
  short_losses.epoch_losses.pop_back();
  EXPECT_FALSE(t.restore(short_losses));
}

TEST(Trainer, LearnsTheSyntheticTask) {
  JobSpec spec = small_spec(ModelKind::mlp, 32, 2000, 50, 4);
  spec.train.lr = 0.005;
  const DataSplits data = make_synthetic(spec.data);
  CpuBackend be(1);
  Trainer t(spec, be, data.train, data.test);
  const EvalResult before = t.evaluate();
  run_steps(t, static_cast<int>(t.total_steps()));
  const EvalResult after = t.evaluate();
  EXPECT_LT(after.loss, before.loss * 0.6);
  EXPECT_GT(after.accuracy, 0.75) << "chance is 0.2";
}

TEST(LrSchedule, ConstantStepCosineAndWarmup) {
  TrainSpec t;
  t.lr = 0.1;
  t.schedule = ScheduleKind::constant;
  EXPECT_DOUBLE_EQ(learning_rate(t, 0, 10, 100), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(t, 99, 10, 100), 0.1);
  t.schedule = ScheduleKind::step;
  t.step_epochs = 2;
  t.step_gamma = 0.5;
  EXPECT_DOUBLE_EQ(learning_rate(t, 19, 10, 100), 0.1);   // epoch 1
  EXPECT_DOUBLE_EQ(learning_rate(t, 20, 10, 100), 0.05);  // epoch 2
  EXPECT_DOUBLE_EQ(learning_rate(t, 45, 10, 100), 0.025);
  t.schedule = ScheduleKind::cosine;
  EXPECT_DOUBLE_EQ(learning_rate(t, 0, 10, 100), 0.1);
  EXPECT_NEAR(learning_rate(t, 50, 10, 100), 0.05, 1e-12);
  EXPECT_NEAR(learning_rate(t, 100, 10, 100), 0.0, 1e-12);
  t.warmup_steps = 10;
  EXPECT_NEAR(learning_rate(t, 0, 10, 110), 0.01, 1e-12);
  EXPECT_NEAR(learning_rate(t, 9, 10, 110), 0.1, 1e-12);
  EXPECT_NEAR(learning_rate(t, 60, 10, 110), 0.05, 1e-12);  // cosine over the 100 steps after warm-up
}

// ---- the loop -------------------------------------------------------------------------------

class ScriptedControl final : public RunControl {
 public:
  std::function<void(int64_t)> on_poll;  // called with the trainer's step at each boundary
  Trainer* trainer = nullptr;
  bool checkpoint = false;
  bool stop = false;
  bool take_checkpoint_request() override {
    if (on_poll && trainer) on_poll(trainer->global_step());
    return std::exchange(checkpoint, false);
  }
  bool stop_requested() override { return stop; }
};

class CollectingSink final : public EventSink {
 public:
  std::vector<json::Value> events;
  void emit(const std::string& line) override {
    auto v = json::parse(line);
    ASSERT_TRUE(v) << line;
    ASSERT_EQ(line.find('\n'), std::string::npos);
    events.push_back(*v);
  }
  std::vector<json::Value> of(const std::string& kind) const {
    std::vector<json::Value> out;
    for (const auto& e : events)
      if (e.find("event")->as_string() == kind) out.push_back(e);
    return out;
  }
};

struct LoopFixture {
  LoopFixture() : LoopFixture(small_spec(ModelKind::mlp)) {}  // 16 steps per epoch, 2 epochs
  explicit LoopFixture(JobSpec s) : spec(std::move(s)) {
    options.device = "cpu";
    control.trainer = &trainer;
  }
  JobSpec spec;
  DataSplits data = make_synthetic(spec.data);
  CpuBackend be{1};
  Trainer trainer{spec, be, data.train, data.test};
  MemoryFileSystem fs;
  CheckpointStore store{fs, "/out", 2};
  ManualClock clock;
  ScriptedControl control;
  CollectingSink sink;
  RunOptions options;
  Expected<RunOutcome> run() { return run_training(trainer, store, fs, clock, control, sink, options); }
};

TEST(TrainingRun, CompletesWithEventsFinalCheckpointAndResult) {
  LoopFixture f;
  f.options.every_steps = 10;
  f.options.log_every = 4;
  auto out = f.run();
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_FALSE(out->interrupted);
  EXPECT_EQ(out->step, 32);
  EXPECT_EQ(f.sink.events.front().find("event")->as_string(), "start");
  EXPECT_EQ(f.sink.events.front().find("total_steps")->as_int(), 32);
  EXPECT_TRUE(f.sink.events.front().find("resumed_from")->is_null());
  const auto steps = f.sink.of("progress");
  ASSERT_EQ(steps.size(), 8u);  // every 4th of 32
  EXPECT_EQ(steps[0].find("step")->as_int(), 4);
  EXPECT_EQ(steps.back().find("epoch")->as_int(), 1);
  const auto epochs = f.sink.of("epoch");
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_GT(epochs[1].find("test_accuracy")->as_double(), 0.2);
  const auto ckpts = f.sink.of("checkpoint");
  ASSERT_EQ(ckpts.size(), 4u);  // steps 10, 20, 30 periodic, then final
  EXPECT_EQ(ckpts[0].find("reason")->as_string(), "periodic");
  EXPECT_EQ(ckpts[3].find("reason")->as_string(), "final");
  EXPECT_EQ(ckpts[3].find("path")->as_string(), "/out/final.ckpt");
  EXPECT_FALSE(f.fs.exists("/out/ckpt-000000000010.ckpt"));  // keep = 2
  EXPECT_TRUE(f.fs.exists("/out/ckpt-000000000030.ckpt"));
  const auto done = f.sink.of("done");
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].find("status")->as_string(), "succeeded");
  EXPECT_EQ(static_cast<float>(done[0].find("final_loss")->as_double()), out->final_loss);  // float text
  auto result_bytes = f.fs.contents("/out/result.json");
  auto result = json::parse(std::string(result_bytes.begin(), result_bytes.end()));
  ASSERT_TRUE(result);
  EXPECT_EQ(result->find("status")->as_string(), "succeeded");
  EXPECT_EQ(result->find("steps")->as_int(), 32);
  EXPECT_EQ(result->find("epochs")->as_int(), 2);
  EXPECT_EQ(result->find("device")->as_string(), "cpu");
  EXPECT_DOUBLE_EQ(result->find("test_accuracy")->as_double(), out->test_accuracy);
}

TEST(TrainingRun, SignalCheckpointsAndContinues) {
  LoopFixture f;
  f.control.on_poll = [&](int64_t step) {
    if (step == 7) f.control.checkpoint = true;
  };
  auto out = f.run();
  ASSERT_TRUE(out);
  const auto ckpts = f.sink.of("checkpoint");
  ASSERT_EQ(ckpts.size(), 2u);
  EXPECT_EQ(ckpts[0].find("reason")->as_string(), "signal");
  EXPECT_EQ(ckpts[0].find("step")->as_int(), 7);
  EXPECT_EQ(out->step, 32);
}

TEST(TrainingRun, StopRequestCheckpointsAndReportsInterrupted) {
  LoopFixture f;
  f.control.on_poll = [&](int64_t step) {
    if (step == 5) f.control.stop = true;
  };
  auto out = f.run();
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->interrupted);
  // Polled at the boundary after step 5: the stop is seen at the next boundary (step 6).
  EXPECT_EQ(out->step, 6);
  const auto ckpts = f.sink.of("checkpoint");
  ASSERT_EQ(ckpts.size(), 1u);
  EXPECT_EQ(ckpts[0].find("reason")->as_string(), "interrupt");
  EXPECT_TRUE(f.fs.exists("/out/ckpt-000000000006.ckpt"));
  const auto done = f.sink.of("done");
  EXPECT_EQ(done[0].find("status")->as_string(), "interrupted");
  EXPECT_TRUE(done[0].find("test_accuracy")->is_null());  // no epoch finished yet
  auto rb = f.fs.contents("/out/result.json");
  EXPECT_NE(std::string(rb.begin(), rb.end()).find("\"interrupted\""), std::string::npos);
}

TEST(TrainingRun, MaxStepsAndTimeBasedCheckpoints) {
  LoopFixture f;
  f.options.max_steps = 12;
  f.options.every_seconds = 30;
  f.control.on_poll = [&](int64_t) { f.clock.advance_seconds(7); };  // 7 "seconds" per step
  auto out = f.run();
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->interrupted);
  EXPECT_EQ(out->step, 12);
  const auto ckpts = f.sink.of("checkpoint");
  ASSERT_GE(ckpts.size(), 3u);
  EXPECT_EQ(ckpts[0].find("reason")->as_string(), "periodic");
  EXPECT_EQ(ckpts.back().find("reason")->as_string(), "interrupt");
}

// The step losses of an interrupted run and its resumption, joined, are the straight run's, and so
// is the final checkpoint.
void expect_joined_run_equals(const LoopFixture& straight, const LoopFixture& part, const LoopFixture& rest) {
  auto losses = [](const CollectingSink& s) {
    std::vector<double> v;
    for (const auto& e : s.of("progress")) v.push_back(e.find("loss")->as_double());
    return v;
  };
  auto joined = losses(part.sink);
  const auto tail = losses(rest.sink);
  joined.insert(joined.end(), tail.begin(), tail.end());
  EXPECT_EQ(joined, losses(straight.sink));
  EXPECT_EQ(straight.fs.contents("/out/final.ckpt"), rest.fs.contents("/out/final.ckpt"));
}

TEST(TrainingRun, ResumedLoopReportsTheSameLossesAsAStraightOne) {
  LoopFixture straight;
  ASSERT_TRUE(straight.run());
  LoopFixture part;
  part.options.max_steps = 11;
  ASSERT_TRUE(part.run());
  auto loaded = part.store.load_newest_valid();
  ASSERT_TRUE(loaded);
  LoopFixture rest;
  ASSERT_TRUE(rest.trainer.restore(loaded->state));
  rest.options.resumed_from = loaded->path;
  ASSERT_TRUE(rest.run());
  expect_joined_run_equals(straight, part, rest);
  EXPECT_EQ(rest.sink.events.front().find("start_step")->as_int(), 11);
  // The epoch lines agree too (the resumed run carries the partial epoch's losses).
  auto ep = [](const CollectingSink& s) {
    std::vector<double> v;
    for (const auto& e : s.of("epoch")) v.push_back(e.find("train_loss")->as_double());
    return v;
  };
  auto ep_joined = ep(part.sink);
  for (double x : ep(rest.sink)) ep_joined.push_back(x);
  EXPECT_EQ(ep_joined, ep(straight.sink));
}

TEST(TrainingRun, AStopBetweenMicroBatchesCheckpointsInsideTheStepAndResumesExactly) {
  JobSpec spec = small_spec(ModelKind::mlp);
  spec.train.accumulate_steps = 4;  // micro-batches of 8
  LoopFixture straight(spec);
  ASSERT_TRUE(straight.run());
  LoopFixture part(spec);
  part.control.on_poll = [&](int64_t step) {
    if (step == 5 && part.trainer.micro_index() == 2) part.control.stop = true;
  };
  auto out = part.run();
  ASSERT_TRUE(out);
  EXPECT_TRUE(out->interrupted);
  auto loaded = part.store.load_newest_valid();
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->state.global_step, 5);
  EXPECT_EQ(loaded->state.micro_step, 3) << "the stop is seen at the next micro-batch boundary";
  LoopFixture rest(spec);
  ASSERT_TRUE(rest.trainer.restore(loaded->state));
  ASSERT_TRUE(rest.run());
  expect_joined_run_equals(straight, part, rest);
}

TEST(TrainingRun, WriteFailureIsAnError) {
  LoopFixture f;
  f.options.every_steps = 3;
  f.fs.fail_next_write_after(10);
  auto out = f.run();
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().code, ErrorCode::io);
}

}  // namespace
}  // namespace jobctl::train
