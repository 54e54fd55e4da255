#include "train/data/batch_order.h"

#include <numeric>

namespace jobctl::train {

namespace {
constexpr uint64_t kShuffleStream = 0x5ff1e;
}

BatchOrder::BatchOrder(int64_t samples, uint64_t seed) : samples_(samples), rng_(derive_seed(seed, kShuffleStream)) {}

void BatchOrder::new_epoch() {
  perm_.resize(static_cast<size_t>(samples_));
  std::iota(perm_.begin(), perm_.end(), 0);
  for (size_t i = perm_.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(rng_.uniform_index(i));
    std::swap(perm_[i - 1], perm_[j]);
  }
}

Status BatchOrder::restore(const Rng::State& state, std::vector<int32_t> permutation) {
  if (!permutation.empty()) {
    if (static_cast<int64_t>(permutation.size()) != samples_)
      return make_error(ErrorCode::corrupt_checkpoint, "the stored sample order has " + std::to_string(permutation.size()) +
                                                  " entries, the dataset " + std::to_string(samples_));
    std::vector<bool> seen(permutation.size(), false);
    for (int32_t v : permutation) {
      if (v < 0 || v >= samples_ || seen[static_cast<size_t>(v)])
        return make_error(ErrorCode::corrupt_checkpoint, "the stored sample order is not a permutation");
      seen[static_cast<size_t>(v)] = true;
    }
  }
  rng_ = Rng::from_state(state);
  perm_ = std::move(permutation);
  return ok_status();
}

}  // namespace jobctl::train
