#include "train/kernels/gemm.h"

#include <algorithm>
#include <vector>

#include "train/kernels/cpu_parallel.h"

#ifdef JOBCTL_HAVE_OPENBLAS
#include <cblas.h>
// OpenBLAS extensions; declared here because the cblas.h found may be the reference one.
extern "C" {
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char* openblas_get_corename(void);
char* openblas_get_config(void);
}
#endif

namespace jobctl::train {


// One product on the calling thread: OpenBLAS (kept at one thread) or the portable GEMM.
void gemm_single_thread(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
              int ldb, float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
#ifdef JOBCTL_HAVE_OPENBLAS
  if (k <= 0) {
    // BLAS would scale C by beta; keep the "C not read when beta == 0" contract exactly.
    gemm_portable(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  cblas_sgemm(CblasRowMajor, ta == Transpose::yes ? CblasTrans : CblasNoTrans,
              tb == Transpose::yes ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#else
  gemm_portable(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

namespace {

constexpr double kSplitFlops = 2e6;  // smaller products run whole on the calling thread
constexpr int kMaxChunks = 8;

// Chunk length for `total` rows or columns: at most kMaxChunks chunks, multiples of 16, >= 32.
int chunk_of(int total) { return std::max(32, ((total + kMaxChunks - 1) / kMaxChunks + 15) / 16 * 16); }

}  // namespace

void gemm(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
          int ldb, float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  const double flops = 2.0 * m * n * static_cast<double>(k);
  const bool a_t = ta == Transpose::yes, b_t = tb == Transpose::yes;
  if (flops < kSplitFlops) {
    gemm_single_thread(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (std::max(m, n) >= 64 && k < 8 * std::max(m, n)) {
    // Independent blocks of C: rows of op(A) or columns of op(B), whichever dimension is larger.
    if (m >= n) {
      cpu::parallel_for(static_cast<size_t>(m), static_cast<size_t>(chunk_of(m)), [&](size_t i0, size_t i1) {
        const float* ai = a_t ? a + i0 : a + i0 * static_cast<size_t>(lda);
        gemm_single_thread(ta, tb, static_cast<int>(i1 - i0), n, k, alpha, ai, lda, b, ldb, beta, c + i0 * static_cast<size_t>(ldc), ldc);
      });
    } else {
      cpu::parallel_for(static_cast<size_t>(n), static_cast<size_t>(chunk_of(n)), [&](size_t j0, size_t j1) {
        const float* bj = b_t ? b + j0 * static_cast<size_t>(ldb) : b + j0;
        gemm_single_thread(ta, tb, m, static_cast<int>(j1 - j0), k, alpha, a, lda, bj, ldb, beta, c + j0, ldc);
      });
    }
    return;
  }
  // A small C over a long k (a weight gradient over many rows): partial products over fixed
  // slices of k, added in slice order; each operand is packed once, not once per block of C.
  const int slice = std::max(256, ((k + kMaxChunks - 1) / kMaxChunks + 255) / 256 * 256);
  const size_t slices = static_cast<size_t>((k + slice - 1) / slice);
  const size_t cells = static_cast<size_t>(m) * static_cast<size_t>(n);
  std::vector<float> partial(slices * cells);
  cpu::parallel_for(static_cast<size_t>(k), static_cast<size_t>(slice), [&](size_t p0, size_t p1) {
    const float* ap = a_t ? a + p0 * static_cast<size_t>(lda) : a + p0;
    const float* bp = b_t ? b + p0 : b + p0 * static_cast<size_t>(ldb);
    gemm_single_thread(ta, tb, m, n, static_cast<int>(p1 - p0), 1.0f, ap, lda, bp, ldb, 0.0f,
             partial.data() + p0 / static_cast<size_t>(slice) * cells, n);
  });
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float s = 0.0f;
      for (size_t q = 0; q < slices; ++q) s += partial[q * cells + static_cast<size_t>(i) * n + j];
      float& out = c[static_cast<size_t>(i) * ldc + j];
      out = alpha * s + (beta == 0.0f ? 0.0f : beta * out);
    }
  }
}

void gemm_reference(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda,
                    const float* b, int ldb, float beta, float* c, int ldc) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) {
        const float av = ta == Transpose::yes ? a[static_cast<size_t>(p) * lda + i] : a[static_cast<size_t>(i) * lda + p];
        const float bv = tb == Transpose::yes ? b[static_cast<size_t>(j) * ldb + p] : b[static_cast<size_t>(p) * ldb + j];
        s += static_cast<double>(av) * static_cast<double>(bv);
      }
      float& cv = c[static_cast<size_t>(i) * ldc + j];
      const double prior = beta == 0.0f ? 0.0 : static_cast<double>(beta) * cv;
      cv = static_cast<float>(static_cast<double>(alpha) * s + prior);
    }
  }
}

bool have_blas() {
#ifdef JOBCTL_HAVE_OPENBLAS
  return true;
#else
  return false;
#endif
}

std::string blas_description() {
#ifdef JOBCTL_HAVE_OPENBLAS
  std::string config = openblas_get_config();
  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64": keep name, version and core.
  const auto second_space = config.find(' ', config.find(' ') + 1);
  std::string head = config.substr(0, second_space);
  return head + " (" + openblas_get_corename() + ")";
#else
  return "portable";
#endif
}

std::string blas_core() {
#ifdef JOBCTL_HAVE_OPENBLAS
  return openblas_get_corename();
#else
  return "";
#endif
}

void set_blas_threads(int n) {
#ifdef JOBCTL_HAVE_OPENBLAS
  // OpenBLAS runs each product on the thread that calls it; gemm() splits the large ones over
  // cpu_parallel's threads, which the other host kernels share (two thread pools on the same
  // cores would spin against each other).
  openblas_set_num_threads(1);
#endif
  cpu::set_parallel_threads(n);
}

int blas_threads() { return cpu::parallel_threads(); }

}  // namespace jobctl::train
