// bfloat16 on the host: the rounding every backend uses (round to nearest, ties to even, NaN kept
// a quiet NaN), and the exact widening back to fp32. The CUDA kernels use __float2bfloat16_rn,
// which rounds the same way; the tests hold the two to bit equality.
//
// Thread safety: pure functions.
#pragma once

#include <bit>
#include <cstdint>

#include "train/kernels/backend.h"

namespace jobctl::train {

inline bf16_t round_to_bf16(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16_t>((u >> 16) | 0x0040u);  // NaN: quiet
  return static_cast<bf16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline float bf16_to_float(bf16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

}  // namespace jobctl::train
