// jobctl-train as a real process (docs/train-cli.md): bit-exact resume after a real SIGTERM,
// SIGUSR1 checkpoints, --resume auto past a corrupt checkpoint, every exit code, and the choice of
// the CPU kernels (a generic core OpenBLAS fell back to is replaced, a user's never; a selection
// that fails its self-check falls back; a resume on other kernels says so).
//
// BLAS threads are pinned (--threads 2) in every run that is compared bit for bit: OpenBLAS splits
// a product among its threads, and the blocking (hence the order in which each sum is formed, hence
// the float rounding) may depend on the thread count. With the same count, every run computes the
// same sums in the same order, so an interrupted-and-resumed run equals an uninterrupted one.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "process_util.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint_format.h"
#include "train/app/cpu_features.h"
#include "train/kernels/gemm.h"
#include "train/kernels/make_backend.h"
#include "train/spec/blas_cores.h"

namespace jobctl::train {
namespace {

using testing::event_of;
using testing::TempDir;
using testing::TrainProcess;

// 8192 synthetic 28x28 samples, MLP 784-512-512-10, batch 128: 64 steps per epoch, 2 epochs, a
// few milliseconds per step, so a SIGTERM after step 40 lands well before the end.
const char* kResumeSpec = R"({
  "model": {"kind": "mlp", "hidden": [512, 512]},
  "data": {"dataset": "synthetic", "samples": 8192, "test_samples": 1000, "features": 784, "classes": 10, "seed": 3},
  "train": {"epochs": 2, "batch_size": 128, "optimizer": "adamw", "lr": 0.001, "schedule": "cosine",
            "warmup_steps": 10, "grad_clip": 1.0, "seed": 42},
  "checkpoint": {"every_steps": 0, "keep": 3}
})";

const char* kSmallSpec = R"({
  "model": {"kind": "mlp", "hidden": [64]},
  "data": {"dataset": "synthetic", "samples": 4096, "test_samples": 500, "features": 64, "classes": 5, "seed": 2},
  "train": {"epochs": 3, "batch_size": 16},
  "checkpoint": {"every_steps": 100, "keep": 3}
})";

struct RunLog {
  std::map<int64_t, double> losses;  // step -> loss
  std::vector<double> epoch_train_losses;
  std::vector<json::Value> events;
  int exit_code = -1;
};

RunLog collect(TrainProcess& p, const std::function<void(const json::Value&)>& on_event = {}) {
  RunLog log;
  while (auto e = p.next()) {
    if (on_event) on_event(*e);
    if (event_of(*e) == "progress") log.losses[e->find("step")->as_int()] = e->find("loss")->as_double();
    if (event_of(*e) == "epoch") log.epoch_train_losses.push_back(e->find("train_loss")->as_double());
    log.events.push_back(*e);
  }
  log.exit_code = p.wait();
  return log;
}

const json::Value* last_of(const RunLog& log, const std::string& kind) {
  for (auto it = log.events.rbegin(); it != log.events.rend(); ++it)
    if (event_of(*it) == kind) return &*it;
  return nullptr;
}

class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::train_binary().empty()) GTEST_SKIP() << "JOBCTL_TRAIN_BIN is not set";
  }
};

TEST_F(ProcessTest, ResumeAfterSigtermIsBitExact) {
  TempDir dir("resume");
  testing::write_text(dir.file("spec.json"), kResumeSpec);
  const std::vector<std::string> common = {"--spec", dir.file("spec.json"), "--device", "cpu", "--threads", "2"};
  auto args = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> a = common;
    a.push_back("--out");
    a.push_back(dir.file(out));
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };

  // 1. Straight through.
  TrainProcess straight(args("straight", {}));
  const RunLog full = collect(straight);
  ASSERT_EQ(full.exit_code, 0);
  ASSERT_EQ(full.losses.size(), 128u);
  ASSERT_EQ(last_of(full, "done")->find("status")->as_string(), "succeeded");

  // 2. The same, stopped by a real SIGTERM part-way.
  TrainProcess first(args("split", {}));
  bool sent = false;
  const RunLog part = collect(first, [&](const json::Value& e) {
    if (!sent && event_of(e) == "progress" && e.find("step")->as_int() >= 40) {
      first.signal(SIGTERM);
      sent = true;
    }
  });
  ASSERT_TRUE(sent);
  EXPECT_EQ(part.exit_code, 0);
  const json::Value* done = last_of(part, "done");
  ASSERT_NE(done, nullptr);
  ASSERT_EQ(done->find("status")->as_string(), "interrupted") << "the run finished before the signal arrived";
  const int64_t stopped_at = done->find("step")->as_int();
  EXPECT_GE(stopped_at, 40);
  EXPECT_LT(stopped_at, 128);
  const json::Value* ck = last_of(part, "checkpoint");
  ASSERT_NE(ck, nullptr);
  EXPECT_EQ(ck->find("reason")->as_string(), "interrupt");
  EXPECT_EQ(ck->find("step")->as_int(), stopped_at);
  EXPECT_FALSE(std::filesystem::exists(dir.file("split/final.ckpt")));

  // 3. A new process resumes from the newest checkpoint and finishes.
  TrainProcess second(args("split", {"--resume", "auto"}));
  const RunLog rest = collect(second);
  ASSERT_EQ(rest.exit_code, 0);
  const json::Value& start = rest.events.front();
  EXPECT_EQ(start.find("start_step")->as_int(), stopped_at);
  EXPECT_NE(start.find("resumed_from")->as_string().find("ckpt-"), std::string::npos);
  EXPECT_EQ(last_of(rest, "done")->find("status")->as_string(), "succeeded");

  // Per-step losses, epoch losses and the final checkpoint's bytes: identical.
  std::map<int64_t, double> joined = part.losses;
  joined.insert(rest.losses.begin(), rest.losses.end());
  EXPECT_EQ(joined, full.losses);
  std::vector<double> epochs = part.epoch_train_losses;
  epochs.insert(epochs.end(), rest.epoch_train_losses.begin(), rest.epoch_train_losses.end());
  EXPECT_EQ(epochs, full.epoch_train_losses);
  const auto a = testing::read_bytes(dir.file("straight/final.ckpt"));
  const auto b = testing::read_bytes(dir.file("split/final.ckpt"));
  ASSERT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == b) << "final.ckpt differs between the straight and the resumed run";
  EXPECT_EQ(last_of(full, "done")->find("test_accuracy")->as_double(),
            last_of(rest, "done")->find("test_accuracy")->as_double());
}


// The core the table picks for this CPU (train/spec/blas_cores.h); empty when it has none or the
// build has no OpenBLAS.
std::string best_core_here() {
  if (!have_blas()) return "";
  auto core = best_blas_core(detect_cpu_features());
  return core ? std::string(core->name) : "";
}

std::string string_field(const json::Value& e, const char* key) {
  const json::Value* v = e.find(key);
  return v && v->is_string() ? v->as_string() : "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Environment of a run: OpenBLAS forced to the generic Prescott core, which the process is told to
// take for the library's own detection (what OpenBLAS does by itself on a CPU it does not know).
std::vector<std::string> prescott_as_librarys_choice() {
  return {"OPENBLAS_CORETYPE=Prescott", "JOBCTL_TEST_CORETYPE_IS_LIBRARYS=1"};
}

TEST_F(ProcessTest, ReplacesAGenericCoreOpenBlasFellBackTo) {
  const std::string best = best_core_here();
  if (best.empty()) GTEST_SKIP() << "no OpenBLAS, or a CPU with nothing better than its generic kernels";
  TempDir dir("kernels");
  testing::write_text(dir.file("spec.json"), kSmallSpec);
  TrainProcess p({"--spec", dir.file("spec.json"), "--out", dir.file("o"), "--device", "cpu", "--max-steps", "3"},
                 prescott_as_librarys_choice());
  const RunLog log = collect(p);
  ASSERT_EQ(log.exit_code, 0);
  const json::Value& start = log.events.front();
  ASSERT_EQ(event_of(start), "start");
  EXPECT_TRUE(contains(string_field(start, "kernels"), "(" + best + ")")) << start.dump();
  EXPECT_TRUE(contains(string_field(start, "device_name"), "(" + best + ")")) << start.dump();
  EXPECT_TRUE(contains(string_field(start, "kernels_selection"), "OpenBLAS chose Prescott")) << start.dump();
  EXPECT_TRUE(contains(string_field(start, "kernels_selection"), "selected " + best)) << start.dump();
  EXPECT_EQ(string_field(start, "kernels_check").rfind("passed", 0), 0u) << start.dump();
  // The checkpoint's header names the kernels the state was computed with.
  auto state = decode_checkpoint(testing::read_bytes(dir.file("o/ckpt-000000000003.ckpt")));
  ASSERT_TRUE(state) << state.error().message;
  EXPECT_EQ(state->kernels, string_field(start, "kernels"));
}

TEST_F(ProcessTest, NeverReplacesTheUsersCoreType) {
  if (!have_blas()) GTEST_SKIP() << "no OpenBLAS";
  TempDir dir("kernels-user");
  testing::write_text(dir.file("spec.json"), kSmallSpec);
  TrainProcess p({"--spec", dir.file("spec.json"), "--out", dir.file("o"), "--device", "cpu", "--max-steps", "2"},
                 {"OPENBLAS_CORETYPE=Prescott"});
  const RunLog log = collect(p);
  ASSERT_EQ(log.exit_code, 0);
  const json::Value& start = log.events.front();
  EXPECT_TRUE(contains(string_field(start, "kernels"), "(Prescott)")) << start.dump();
  EXPECT_TRUE(contains(string_field(start, "kernels_selection"), "OPENBLAS_CORETYPE=Prescott was set")) << start.dump();
  EXPECT_EQ(string_field(start, "kernels_check").rfind("passed", 0), 0u) << start.dump();
}

// --measure-cpu prints one core's rate on the models' products, measured on the kernels a job
// would run: the ones selected for this CPU when OpenBLAS fell back to its generic core, and the
// generic ones when the user pinned them.
TEST_F(ProcessTest, MeasureCpuTimesTheKernelsJobsRun) {
  auto measure = [](std::vector<std::string> env) {
    TrainProcess p({"--measure-cpu"}, std::move(env));
    const RunLog log = collect(p);
    EXPECT_EQ(log.exit_code, 0);
    EXPECT_EQ(log.events.size(), 1u);
    json::Value line = log.events.empty() ? json::Value() : log.events.front();
    EXPECT_EQ(event_of(line), "cpu_throughput") << line.dump();
    EXPECT_GE(line.find("rounds") ? line.find("rounds")->as_int() : 0, 5) << line.dump();
    return line;
  };
  const json::Value own = measure({});
  ASSERT_TRUE(own.find("core_gflops"));
  EXPECT_GT(own.find("core_gflops")->as_double(), 0) << own.dump();
  EXPECT_FALSE(string_field(own, "kernels").empty()) << own.dump();
  const std::string best = best_core_here();
  if (best.empty()) return;  // no OpenBLAS, or nothing better than the generic kernels
  EXPECT_TRUE(contains(string_field(measure(prescott_as_librarys_choice()), "kernels"), "(" + best + ")"));
  EXPECT_TRUE(contains(string_field(measure({"OPENBLAS_CORETYPE=Prescott"}), "kernels"), "(Prescott)"));
}

TEST_F(ProcessTest, ASelectionThatFailsItsSelfCheckFallsBack) {
  const std::string best = best_core_here();
  if (best.empty()) GTEST_SKIP() << "no OpenBLAS, or a CPU with nothing better than its generic kernels";
  TempDir dir("kernels-fallback");
  testing::write_text(dir.file("spec.json"), kSmallSpec);
  // A zero tolerance: the selected kernels' real rounding differences from the portable GEMM fail
  // the check, and the process goes back to the library's own core.
  auto env = prescott_as_librarys_choice();
  env.push_back("JOBCTL_TEST_GEMM_CHECK_TOLERANCE=0");
  TrainProcess p({"--spec", dir.file("spec.json"), "--out", dir.file("o"), "--device", "cpu", "--max-steps", "2"}, env);
  const RunLog log = collect(p);
  ASSERT_EQ(log.exit_code, 0);
  const json::Value& start = log.events.front();
  EXPECT_TRUE(contains(string_field(start, "kernels"), "(Prescott)")) << start.dump();
  const std::string selection = string_field(start, "kernels_selection");
  EXPECT_TRUE(contains(selection, "the selected " + best + " kernels' self-check failed")) << selection;
  EXPECT_TRUE(contains(selection, "back to OpenBLAS's own Prescott")) << selection;
}

TEST_F(ProcessTest, AResumeOnOtherKernelsSaysSo) {
  const std::string best = best_core_here();
  if (best.empty()) GTEST_SKIP() << "no OpenBLAS, or a CPU with nothing better than its generic kernels";
  TempDir dir("kernels-resume");
  testing::write_text(dir.file("spec.json"), kSmallSpec);
  const std::vector<std::string> args = {"--spec", dir.file("spec.json"), "--out", dir.file("o"), "--device", "cpu"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = args;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  TrainProcess first(with({"--max-steps", "4"}), {"OPENBLAS_CORETYPE=Prescott"});
  ASSERT_EQ(collect(first).exit_code, 0);

  // The same kernels: nothing to say.
  TrainProcess same(with({"--resume", "auto", "--max-steps", "6"}), {"OPENBLAS_CORETYPE=Prescott"});
  const RunLog same_log = collect(same);
  ASSERT_EQ(same_log.exit_code, 0);
  const json::Value* unchanged = same_log.events.front().find("kernels_changed");
  ASSERT_TRUE(unchanged && unchanged->is_bool()) << same_log.events.front().dump();
  EXPECT_FALSE(unchanged->as_bool());

  // Other kernels: allowed, and the start event says the run continues on them.
  TrainProcess other(with({"--resume", "auto"}), {"OPENBLAS_CORETYPE=" + best});
  const RunLog log = collect(other);
  ASSERT_EQ(log.exit_code, 0);
  const json::Value& start = log.events.front();
  EXPECT_EQ(start.find("start_step")->as_int(), 6);
  const json::Value* changed = start.find("kernels_changed");
  ASSERT_TRUE(changed && changed->is_bool()) << start.dump();
  EXPECT_TRUE(changed->as_bool());
  EXPECT_TRUE(contains(string_field(start, "checkpoint_kernels"), "(Prescott)")) << start.dump();
  EXPECT_TRUE(contains(string_field(start, "kernels"), "(" + best + ")")) << start.dump();
  EXPECT_EQ(last_of(log, "done")->find("status")->as_string(), "succeeded");
  auto final_state = decode_checkpoint(testing::read_bytes(dir.file("o/final.ckpt")));
  ASSERT_TRUE(final_state) << final_state.error().message;
  EXPECT_EQ(final_state->kernels, string_field(start, "kernels"));
}

TEST_F(ProcessTest, Sigusr1CheckpointsAndTrainingContinues) {
  TempDir dir("usr1");
  testing::write_text(dir.file("spec.json"), kSmallSpec);
  TrainProcess p({"--spec", dir.file("spec.json"), "--out", dir.file("out"), "--device", "cpu", "--threads", "1"});
  bool sent = false;
  const RunLog log = collect(p, [&](const json::Value& e) {
    if (!sent && event_of(e) == "progress" && e.find("step")->as_int() >= 30) {
      p.signal(SIGUSR1);
      sent = true;
    }
  });
  EXPECT_EQ(log.exit_code, 0);
  bool saw_signal_checkpoint = false;
  for (const auto& e : log.events)
    if (event_of(e) == "checkpoint" && e.find("reason")->as_string() == "signal") {
      saw_signal_checkpoint = true;
      EXPECT_TRUE(std::filesystem::exists(e.find("path")->as_string()) ||
                  e.find("step")->as_int() < 500);  // may have been pruned by later periodic ones
    }
  EXPECT_TRUE(saw_signal_checkpoint);
  EXPECT_EQ(last_of(log, "done")->find("status")->as_string(), "succeeded");
  EXPECT_EQ(last_of(log, "done")->find("step")->as_int(), 768);
  EXPECT_TRUE(std::filesystem::exists(dir.file("out/final.ckpt")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("out/result.json")));
}

TEST_F(ProcessTest, ResumeAutoSkipsACorruptNewestCheckpoint) {
  TempDir dir("corrupt");
  testing::write_text(dir.file("spec.json"), kSmallSpec);
  const std::vector<std::string> base = {"--spec", dir.file("spec.json"), "--out", dir.file("out"), "--device", "cpu",
                                         "--threads", "1", "--log-every", "50"};
  auto with = [&](std::vector<std::string> extra) {
    auto a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  TrainProcess first(with({"--max-steps", "350"}));  // periodic 100, 200, 300, then 350 (interrupt)
  const RunLog part = collect(first);
  ASSERT_EQ(part.exit_code, 0);
  ASSERT_EQ(last_of(part, "done")->find("status")->as_string(), "interrupted");
  // Tear the newest file in half, as a crash of a non-atomic writer would.
  const std::string newest = dir.file("out/ckpt-000000000350.ckpt");
  auto bytes = testing::read_bytes(newest);
  ASSERT_FALSE(bytes.empty());
  bytes.resize(bytes.size() / 2);
  std::ofstream(newest, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(bytes.data()),
                                                                  static_cast<std::streamsize>(bytes.size()));
  TrainProcess second(with({"--resume", "auto"}));
  const RunLog rest = collect(second);
  ASSERT_EQ(rest.exit_code, 0);
  EXPECT_EQ(rest.events.front().find("start_step")->as_int(), 300);
  EXPECT_EQ(last_of(rest, "done")->find("status")->as_string(), "succeeded");
}

int run_expecting_error(const std::vector<std::string>& args, std::string* message) {
  TrainProcess p(args);
  const RunLog log = collect(p);
  const json::Value* err = last_of(log, "error");
  if (err && message) *message = err->find("message")->as_string();
  return log.exit_code;
}

TEST_F(ProcessTest, ExitCodes) {
  TempDir dir("codes");
  std::string msg;
  // 2: usage and invalid specs (the message names the field).
  EXPECT_EQ(run_expecting_error({"--spec", dir.file("none.json")}, &msg), 2);
  EXPECT_NE(msg.find("--out"), std::string::npos) << msg;
  EXPECT_EQ(run_expecting_error({"--spec", dir.file("none.json"), "--out", dir.file("o")}, &msg), 2);
  testing::write_text(dir.file("bad.json"),
                      R"({"model": {"kind": "mlp"}, "data": {"dataset": "synthetic"}, "train": {"epochs": -1}})");
  EXPECT_EQ(run_expecting_error({"--spec", dir.file("bad.json"), "--out", dir.file("o")}, &msg), 2);
  EXPECT_NE(msg.find("train.epochs"), std::string::npos) << msg;
  testing::write_text(dir.file("unknown.json"),
                      R"({"model": {"kind": "mlp", "depth": 3}, "data": {"dataset": "synthetic"}})");
  EXPECT_EQ(run_expecting_error({"--spec", dir.file("unknown.json"), "--out", dir.file("o")}, &msg), 2);
  EXPECT_NE(msg.find("model.depth"), std::string::npos) << msg;

  // 3: the dataset cannot be read.
  testing::write_text(dir.file("fm.json"), R"({"model": {"kind": "mlp"}, "data": {"dataset": "fashion-mnist"}})");
  EXPECT_EQ(run_expecting_error({"--spec", dir.file("fm.json"), "--out", dir.file("o"), "--device", "cpu",
                                 "--data-dir", dir.file("no-such-dir")},
                                &msg),
            3);
  EXPECT_NE(msg.find("no-such-dir"), std::string::npos) << msg;

  // 4: nothing to resume from, or a checkpoint of another spec.
  testing::write_text(dir.file("a.json"), kSmallSpec);
  EXPECT_EQ(run_expecting_error({"--spec", dir.file("a.json"), "--out", dir.file("empty"), "--device", "cpu",
                                 "--resume", "auto"},
                                &msg),
            4);
  TrainProcess make({"--spec", dir.file("a.json"), "--out", dir.file("a"), "--device", "cpu", "--max-steps", "5"});
  ASSERT_EQ(collect(make).exit_code, 0);
  std::string other = kSmallSpec;
  other.replace(other.find("\"epochs\": 3"), 11, "\"epochs\": 4");
  testing::write_text(dir.file("b.json"), other);
  EXPECT_EQ(run_expecting_error({"--spec", dir.file("b.json"), "--out", dir.file("b"), "--device", "cpu", "--resume",
                                 dir.file("a/ckpt-000000000005.ckpt")},
                                &msg),
            4);
  EXPECT_NE(msg.find("fingerprint"), std::string::npos) << msg;

  // 6: more memory than the machine has (16 dense layers of 65,536: terabytes), refused before
  // anything is allocated rather than ending in std::bad_alloc or the OOM killer.
  testing::write_text(dir.file("huge.json"), R"({"model": {"kind": "mlp", "hidden": [65536, 65536, 65536, 65536,
      65536, 65536, 65536, 65536, 65536, 65536, 65536, 65536, 65536, 65536, 65536, 65536]},
      "data": {"dataset": "synthetic"}})");
  EXPECT_EQ(run_expecting_error({"--spec", dir.file("huge.json"), "--out", dir.file("h"), "--device", "cpu"}, &msg), 6);
  EXPECT_NE(msg.find("not enough memory"), std::string::npos) << msg;

  // 5: CUDA asked for where there is none.
  if (cuda_devices() == 0) {
    EXPECT_EQ(run_expecting_error({"--spec", dir.file("a.json"), "--out", dir.file("c"), "--device", "cuda"}, &msg), 5);
  }
}

}  // namespace
}  // namespace jobctl::train
