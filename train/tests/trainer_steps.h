// Runs a Trainer for the tests: whole optimizer steps, and the loss of each.
#pragma once

#include <vector>

#include "train/trainer/trainer.h"

namespace jobctl::train::testing {

// Up to `n` steps (fewer when the run ends); the loss of each.
inline std::vector<float> run_steps(Trainer& t, int n) {
  std::vector<float> losses;
  for (int i = 0; i < n && !t.finished(); ++i) {
    t.step();
    losses.push_back(t.last_loss());
  }
  return losses;
}

// Every step left.
inline std::vector<float> run_all(Trainer& t) { return run_steps(t, static_cast<int>(t.total_steps())); }

}  // namespace jobctl::train::testing
