// The random number generator of the training core: xoshiro256** (Blackman & Vigna), seeded
// through SplitMix64.
//
// Why our own rather than <random>: the standard distributions (normal_distribution, ...) are
// implementation-defined, so the same seed could give different weights with another standard
// library, and a checkpoint must be able to hold the generator's complete state in a fixed
// format. Here the state is four 64-bit words, and every derived value (uniform index, float,
// normal) is defined by this file alone.
//
// Thread safety: a value type; one Rng per thread.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace jobctl::train {

// SplitMix64 step: a good 64-bit mix, used for seeding and for deriving independent streams.
inline uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A seed for stream `stream` of `seed` (initialisation, shuffling, synthetic data, ...), so that
// each purpose has its own sequence and adding a use of randomness does not shift the others.
inline uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  uint64_t x = seed ^ (0xD1B54A32D192ED03ull * (stream + 1));
  return splitmix64(x);
}

class Rng {
 public:
  __extension__ typedef unsigned __int128 U128;  // GCC/Clang: 64x64 -> 128-bit products

  using State = std::array<uint64_t, 4>;

  explicit Rng(uint64_t seed = 0) {
    uint64_t x = seed;
    for (auto& w : s_) w = splitmix64(x);
  }

  static Rng from_state(const State& s) {
    Rng r;
    r.s_ = s;
    return r;
  }
  const State& state() const { return s_; }

  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n), unbiased (Lemire's multiply with rejection). n > 0.
  uint64_t uniform_index(uint64_t n) {
    U128 m = static_cast<U128>(next_u64()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<U128>(next_u64()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }

  // Standard normal by Box-Muller (one value per call, so the state alone defines the sequence).
  double normal() {
    double u1 = uniform01();
    while (u1 <= 0.0) u1 = uniform01();
    const double u2 = uniform01();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586476925 * u2);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  State s_{};
};

}  // namespace jobctl::train
