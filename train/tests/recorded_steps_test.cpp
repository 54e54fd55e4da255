// The recorded-step (CUDA graph) cache contract, on the CPU through RecordingBackend, which records
// and replays steps with their raw pointers as CUDA graphs do: recordings are kept per owner, so
// two Trainers on one backend each replay their own steps, and a Trainer's recordings go with it,
// so a later Trainer never replays steps over freed buffers. The same checks against the cache as
// it was keyed before owners existed (by the caller's key alone) fail, which shows they can.
#include <gtest/gtest.h>

#include "recording_backend.h"
#include "test_util.h"
#include "trainer_steps.h"
#include "train/data/synthetic.h"
#include "train/kernels/cpu_backend.h"
#include "train/trainer/trainer.h"

namespace jobctl::train {
namespace {

using testing::RecordingBackend;
using testing::small_spec;

std::vector<float> reference_losses(const JobSpec& spec, int steps) {
  const DataSplits data = make_synthetic(spec.data);
  CpuBackend cpu(1);
  Trainer t(spec, cpu, data.train, data.test);
  return testing::run_steps(t, steps);
}

// Two trainers stepped in turn on one backend; their losses.
std::pair<std::vector<float>, std::vector<float>> interleaved(RecordingBackend& backend, const JobSpec& a_spec,
                                                              const JobSpec& b_spec, int steps) {
  const DataSplits a_data = make_synthetic(a_spec.data), b_data = make_synthetic(b_spec.data);
  Trainer a(a_spec, backend, a_data.train, a_data.test), b(b_spec, backend, b_data.train, b_data.test);
  std::vector<float> la, lb;
  for (int i = 0; i < steps; ++i) {
    a.step();
    la.push_back(a.last_loss());
    b.step();
    lb.push_back(b.last_loss());
  }
  return {la, lb};
}

JobSpec other_seed(JobSpec s) {
  s.train.seed = 99;
  return s;
}

TEST(RecordedSteps, TwoTrainersOnOneBackendEachReplayTheirOwnSteps) {
  const JobSpec spec = small_spec(ModelKind::mlp);
  RecordingBackend backend;
  const auto [la, lb] = interleaved(backend, spec, other_seed(spec), 30);
  EXPECT_GT(backend.replays(), 40) << "the steps were not replayed";
  EXPECT_EQ(backend.stale_replays(), 0);
  EXPECT_EQ(la, reference_losses(spec, 30));
  EXPECT_EQ(lb, reference_losses(other_seed(spec), 30));
}

TEST(RecordedSteps, ATrainerTakesItsRecordingsWithIt) {
  RecordingBackend backend;
  const JobSpec mlp = small_spec(ModelKind::mlp), cnn = small_spec(ModelKind::cnn);
  {
    const DataSplits data = make_synthetic(mlp.data);
    Trainer t(mlp, backend, data.train, data.test);
    for (int i = 0; i < 5; ++i) t.step();
    EXPECT_GT(backend.recordings(), 0u);
  }
  EXPECT_EQ(backend.recordings(), 0u) << "the trainer's recordings outlived it";
  // The same batch size, so the same step keys: the CNN must record its own steps.
  const DataSplits data = make_synthetic(cnn.data);
  Trainer t(cnn, backend, data.train, data.test);
  const std::vector<float> losses = testing::run_steps(t, 20);
  EXPECT_EQ(backend.stale_replays(), 0);
  EXPECT_EQ(losses, reference_losses(cnn, 20));
}

TEST(RecordedSteps, TheChecksCatchACacheKeyedByStepAlone) {
  const JobSpec spec = small_spec(ModelKind::mlp);
  {
    RecordingBackend old_cache(/*key_by_owner=*/false);
    const auto [la, lb] = interleaved(old_cache, spec, other_seed(spec), 30);
    const auto want_b = reference_losses(other_seed(spec), 30);
    int differ = 0;
    for (size_t i = 0; i < lb.size(); ++i) differ += lb[i] != want_b[i];
    EXPECT_GE(differ, 28) << "the second trainer should replay the first one's steps";
  }
  RecordingBackend old_cache(/*key_by_owner=*/false);
  {
    const DataSplits data = make_synthetic(spec.data);
    Trainer t(spec, old_cache, data.train, data.test);
    for (int i = 0; i < 5; ++i) t.step();
  }
  const JobSpec cnn = small_spec(ModelKind::cnn);
  const DataSplits data = make_synthetic(cnn.data);
  Trainer t(cnn, old_cache, data.train, data.test);
  for (int i = 0; i < 3; ++i) t.step();
  EXPECT_GT(old_cache.stale_replays(), 0) << "the CNN should replay the freed MLP's steps";
}

}  // namespace
}  // namespace jobctl::train
