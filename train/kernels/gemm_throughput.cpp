#include "train/kernels/gemm_throughput.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <utility>
#include <vector>

#include "train/kernels/gemm.h"
#include "train/kernels/gemm_self_check.h"

namespace jobctl::train {

GemmThroughput measure_core_gemm_throughput(double budget_seconds) {
  using Clock = std::chrono::steady_clock;
  struct Operands {
    GemmShape shape;
    int lda, ldb;
    std::vector<float> a, b, c;
  };
  // Values away from zero and denormals (their speed is the kernels' usual one); the products'
  // results are not looked at.
  std::vector<Operands> products;
  for (const GemmShape& s : model_gemm_shapes()) {
    Operands p{s, s.ta == Transpose::yes ? s.m : s.k, s.tb == Transpose::yes ? s.k : s.n,
               std::vector<float>(static_cast<size_t>(s.m) * s.k, 0.5f),
               std::vector<float>(static_cast<size_t>(s.k) * s.n, -0.25f),
               std::vector<float>(static_cast<size_t>(s.m) * s.n)};
    products.push_back(std::move(p));
  }
  GemmThroughput result;
  std::vector<double> best_seconds(products.size(), 0);
  const Clock::time_point start = Clock::now();
  for (;;) {
    for (size_t i = 0; i < products.size(); ++i) {
      Operands& p = products[i];
      const Clock::time_point product_start = Clock::now();
      gemm_single_thread(p.shape.ta, p.shape.tb, p.shape.m, p.shape.n, p.shape.k, 1.0f, p.a.data(), p.lda, p.b.data(),
                         p.ldb, 0.0f, p.c.data(), p.shape.n);
      const double seconds = std::chrono::duration<double>(Clock::now() - product_start).count();
      if (seconds > 0 && (best_seconds[i] == 0 || seconds < best_seconds[i])) best_seconds[i] = seconds;
    }
    ++result.rounds;
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (result.rounds >= kMinThroughputRounds && result.seconds >= budget_seconds) break;
  }
  for (size_t i = 0; i < products.size(); ++i) {
    if (best_seconds[i] <= 0) continue;
    const GemmShape& s = products[i].shape;
    result.core_gflops = std::max(result.core_gflops, 2.0 * s.m * s.n * s.k / best_seconds[i] / 1e9);
  }
  return result;
}

}  // namespace jobctl::train
