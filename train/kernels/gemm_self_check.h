// The start-up check of the GEMM kernels in use: a few products of the shapes the models run
// (MLP 784-256-128-10 and the CNN's im2col products, every transpose the layers use)
// through gemm_single_thread() — OpenBLAS with the kernels it loaded — against the portable GEMM
// (gemm_portable.cpp) on the same inputs.
//
// Tolerance: every element must satisfy |c - c_portable| <= tolerance * sum_k |a_ik * b_kj|, i.e.
// the two may differ by the rounding of sums formed in another order (a few units in the last
// place times sqrt(k)), never by more. kGemmCheckTolerance = 1e-4 is about 800 float32 ulps of
// the sum of magnitudes: far above any rounding difference at these k, far below a wrong result.
//
// Thread safety: runs on the calling thread; call it before training starts.
#pragma once

#include <span>
#include <string>

#include "train/kernels/backend.h"

namespace jobctl::train {

inline constexpr double kGemmCheckTolerance = 1e-4;

// One product the models run: C[m,n] = op(A)[m,k] * op(B)[k,n].
struct GemmShape {
  Transpose ta, tb;
  int m, n, k;
};

// The products the check runs (the start-up throughput measurement times the same ones,
// gemm_throughput.h).
std::span<const GemmShape> model_gemm_shapes();

struct GemmCheckResult {
  bool passed = true;
  double worst = 0;       // max over all elements of |c - c_portable| / sum_k |a_ik * b_kj|
  std::string worst_at;   // the product it was in, e.g. "NT 128x128x3136"
  // "passed (worst 3.1e-08 <= 1e-04 of the magnitude sum, 7 products)" or "failed (...)".
  std::string summary() const;
  double tolerance = kGemmCheckTolerance;
  int products = 0;
};

GemmCheckResult check_gemm_kernels(double tolerance = kGemmCheckTolerance);

}  // namespace jobctl::train
