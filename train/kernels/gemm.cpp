#include "train/kernels/gemm.h"

#include <vector>

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

void gemm(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
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

void set_blas_threads(int n) {
#ifdef JOBCTL_HAVE_OPENBLAS
  if (n > 0) openblas_set_num_threads(n);
#else
  (void)n;
#endif
}

int blas_threads() {
#ifdef JOBCTL_HAVE_OPENBLAS
  return openblas_get_num_threads();
#else
  return 1;
#endif
}

}  // namespace jobctl::train
