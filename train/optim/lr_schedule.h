// The learning rate of each step, from the spec's train section.
//
//   lr(t) = train.lr * warmup(t) * decay(t)          t = 0-based global step
//   warmup(t) = (t + 1) / warmup_steps  for t < warmup_steps, else 1
//   decay: constant  1
//          step      step_gamma ^ floor(epoch(t) / step_epochs), epoch(t) = t / steps_per_epoch
//          cosine    1 during warm-up, then 0.5 * (1 + cos(pi * (t - W) / (total_steps - W)))
//                    (W = warmup_steps), reaching 0 after the last step
//
// Computed in double and handed to the device as float; a pure function of its arguments.
#pragma once

#include <cstdint>

#include "train/spec/job_spec.h"

namespace jobctl::train {

double learning_rate(const TrainSpec& train, int64_t step, int64_t steps_per_epoch, int64_t total_steps);

}  // namespace jobctl::train
