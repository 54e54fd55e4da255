// Everything the next training step depends on: what a checkpoint holds (checkpoint_format.h
// writes it; docs/checkpoint-format.md documents the bytes).
//
// Thread safety: a plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/data/rng.h"
#include "train/spec/job_spec.h"

namespace jobctl::train {

struct TrainingState {
  // The kernels the state was computed with (RunOptions::kernels; the header's KERN section);
  // empty when unknown (format versions 1 and 2, or a state not written by jobctl-train).
  std::string kernels;

  // Identity: which training this state belongs to.
  uint64_t fingerprint = 0;   // training_fingerprint(spec): model, data and train sections
  uint64_t layout_hash = 0;   // Network::layout_hash(): layer names, shapes, parameter counts

  // Position.
  int64_t global_step = 0;      // steps completed
  int64_t epoch = 0;            // epoch of the next step (0-based)
  int64_t cursor = 0;           // samples of that epoch already consumed (micro-batches included)
  int64_t steps_per_epoch = 0;  // consistency checks against the resuming run
  int64_t batch_size = 0;
  int64_t train_samples = 0;

  // Data order: the shuffle stream and the current epoch's permutation (empty before the first).
  Rng::State shuffle_rng{};
  std::vector<int32_t> permutation;

  // Progress figures, so a resumed run reports exactly what an uninterrupted one would.
  std::vector<float> epoch_losses;  // per-step losses of the current epoch so far
  float last_loss = 0;              // loss of the last completed step (0 before any)
  bool has_eval = false;            // an epoch has finished and was evaluated
  int64_t eval_epoch = -1;
  double train_loss = 0;            // mean step loss of that epoch
  double test_loss = 0;
  double test_accuracy = 0;

  // Weights and optimizer state.
  OptimizerKind optimizer = OptimizerKind::adamw;
  std::vector<float> params;
  std::vector<float> moment1;  // AdamW first moment, or SGD momentum buffer
  std::vector<float> moment2;  // AdamW second moment; empty for SGD

  // Inside an optimizer step (train.accumulate_steps > 1, a checkpoint between micro-batches):
  // the micro-batches of step `global_step` (0-based) already done, the gradient they added up,
  // and their per-sample losses. 0 and empty at a step boundary.
  int64_t micro_step = 0;
  std::vector<float> partial_grads;
  std::vector<float> partial_row_losses;

  friend bool operator==(const TrainingState&, const TrainingState&) = default;
};

}  // namespace jobctl::train
