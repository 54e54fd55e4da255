// Single-precision matrix products on the host, row-major:
//   C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C   (C is not read when beta == 0)
// where op(X) is X or its transpose and lda/ldb/ldc are the row strides of the stored matrices.
//
// gemm() uses OpenBLAS's cblas_sgemm when the build found it (JOBCTL_HAVE_OPENBLAS) and the
// portable blocked GEMM otherwise. Both are deterministic for a fixed thread count: OpenBLAS splits
// the output among its threads, and each element is always summed in the same order.
//
// Thread safety: the products are safe from any thread; set_blas_threads() changes a process-wide
// setting and should be called once at start-up.
#pragma once

#include <string>

#include "train/kernels/backend.h"

namespace jobctl::train {

void gemm(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
          int ldb, float beta, float* c, int ldc);

// The same product on the calling thread only (for kernels that already run on every thread).
void gemm_single_thread(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda,
                        const float* b, int ldb, float beta, float* c, int ldc);

// The cache-blocked, register-tiled fallback (single thread), always compiled so that tests can
// hold it to the reference whether or not OpenBLAS is present.
void gemm_portable(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda,
                   const float* b, int ldb, float beta, float* c, int ldc);

// Naive triple loop accumulating in double: the reference the tests compare against.
void gemm_reference(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda,
                    const float* b, int ldb, float beta, float* c, int ldc);

bool have_blas();
// "OpenBLAS 0.3.21 (Haswell)" or "portable": the kernels' name (start event, checkpoints).
std::string blas_description();
// The core OpenBLAS loaded ("Haswell", "Prescott", ...; openblas_get_corename()); empty without
// OpenBLAS.
std::string blas_core();
// Number of threads OpenBLAS uses (1 for the portable GEMM). n <= 0 leaves it unchanged.
void set_blas_threads(int n);
int blas_threads();

}  // namespace jobctl::train
