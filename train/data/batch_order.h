// The order in which each epoch visits the training samples.
//
// At the start of every epoch the permutation is rebuilt as a Fisher-Yates shuffle of 0..n-1
// drawn from one random stream (derived from train.seed), which continues from epoch to epoch.
// A checkpoint stores the stream's state and the current permutation, so a resumed run sees the
// same batches in the same order.
//
// Thread safety: a value type; not shared between threads.
#pragma once

#include <cstdint>
#include <vector>

#include "base/expected.h"
#include "train/data/rng.h"

namespace jobctl::train {

class BatchOrder {
 public:
  BatchOrder(int64_t samples, uint64_t seed);

  int64_t samples() const { return samples_; }
  // Draws the next epoch's permutation.
  void new_epoch();
  // The current epoch's order (empty before the first new_epoch()).
  const std::vector<int32_t>& permutation() const { return perm_; }
  const Rng::State& rng_state() const { return rng_.state(); }

  // Restores a stored state; the permutation must be empty or a permutation of 0..samples-1
  // (error code "corrupt_checkpoint" otherwise).
  Status restore(const Rng::State& state, std::vector<int32_t> permutation);

 private:
  int64_t samples_;
  Rng rng_;
  std::vector<int32_t> perm_;
};

}  // namespace jobctl::train
