// The portable GEMM: Goto-style blocking (a KC x NC panel of B and an MC x KC block of A are packed
// into contiguous strips that stay in cache) around a 4 x 16 register-tiled micro-kernel written
// for the auto-vectoriser. On x86-64 the micro-kernel is compiled for AVX-512, AVX2+FMA and
// baseline SSE2, and the loader picks the best the CPU has (GCC target_clones).
//
// Determinism: each C element is accumulated over k in increasing order within a KC block and
// the blocks are added in increasing order, whatever the sizes of the other dimensions.
#include <algorithm>
#include <cstddef>
#include <vector>

#include "train/kernels/gemm.h"
#include "train/kernels/target_clones.h"

namespace jobctl::train {

namespace {

constexpr int kMr = 4;    // rows of the register tile
constexpr int kNr = 16;   // columns of the register tile
constexpr int kKc = 256;  // depth of a packed block
constexpr int kMc = 128;  // rows of a packed A block (multiple of kMr)
constexpr int kNc = 2048; // columns of a packed B panel (multiple of kNr)

// acc[kMr][kNr] = sum over p < kc of ap[p][i] * bp[p][j].
JOBCTL_CPU_CLONES
void micro_kernel(int kc, const float* __restrict ap, const float* __restrict bp, float* __restrict acc) {
  float c[kMr][kNr] = {};
  for (int p = 0; p < kc; ++p) {
    const float* __restrict av = ap + static_cast<size_t>(p) * kMr;
    const float* __restrict bv = bp + static_cast<size_t>(p) * kNr;
    for (int i = 0; i < kMr; ++i) {
      const float a = av[i];
      for (int j = 0; j < kNr; ++j) c[i][j] += a * bv[j];
    }
  }
  for (int i = 0; i < kMr; ++i)
    for (int j = 0; j < kNr; ++j) acc[i * kNr + j] = c[i][j];
}

// op(A)(i, p) and op(B)(p, j).
inline float at(const float* a, int lda, bool trans, int i, int p) {
  return trans ? a[static_cast<size_t>(p) * lda + i] : a[static_cast<size_t>(i) * lda + p];
}

// Packs op(B)[pc .. pc+kc, jc .. jc+nc] into strips of kNr columns: strip s holds, for each p, the
// kNr values op(B)(pc+p, jc + s*kNr + j), zero-padded past nc.
void pack_b(const float* b, int ldb, bool trans, int pc, int kc, int jc, int nc, float* out) {
  for (int s = 0; s * kNr < nc; ++s) {
    const int j0 = jc + s * kNr;
    const int width = std::min(kNr, nc - s * kNr);
    float* dst = out + static_cast<size_t>(s) * kc * kNr;
    for (int p = 0; p < kc; ++p) {
      float* row = dst + static_cast<size_t>(p) * kNr;
      if (!trans) {
        const float* src = b + static_cast<size_t>(pc + p) * ldb + j0;
        for (int j = 0; j < width; ++j) row[j] = src[j];
      } else {
        for (int j = 0; j < width; ++j) row[j] = b[static_cast<size_t>(j0 + j) * ldb + pc + p];
      }
      for (int j = width; j < kNr; ++j) row[j] = 0.0f;
    }
  }
}

// Packs op(A)[ic .. ic+mc, pc .. pc+kc] into strips of kMr rows (p-major), zero-padded past mc.
void pack_a(const float* a, int lda, bool trans, int ic, int mc, int pc, int kc, float* out) {
  for (int s = 0; s * kMr < mc; ++s) {
    const int i0 = ic + s * kMr;
    const int height = std::min(kMr, mc - s * kMr);
    float* dst = out + static_cast<size_t>(s) * kc * kMr;
    for (int p = 0; p < kc; ++p) {
      float* col = dst + static_cast<size_t>(p) * kMr;
      for (int i = 0; i < height; ++i) col[i] = at(a, lda, trans, i0 + i, pc + p);
      for (int i = height; i < kMr; ++i) col[i] = 0.0f;
    }
  }
}

}  // namespace

void gemm_portable(Transpose ta, Transpose tb, int m, int n, int k, float alpha, const float* a, int lda,
                   const float* b, int ldb, float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  auto c_at = [&](int i, int j) -> float& { return c[static_cast<size_t>(i) * ldc + j]; };
  if (k <= 0) {
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) c_at(i, j) = beta == 0.0f ? 0.0f : beta * c_at(i, j);
    return;
  }
  const bool trans_a = ta == Transpose::yes;
  const bool trans_b = tb == Transpose::yes;
  std::vector<float> bpack(static_cast<size_t>(kKc) * (kNc + kNr));
  std::vector<float> apack(static_cast<size_t>(kKc) * (kMc + kMr));
  alignas(64) float acc[kMr * kNr];

  for (int jc = 0; jc < n; jc += kNc) {
    const int nc = std::min(kNc, n - jc);
    for (int pc = 0; pc < k; pc += kKc) {
      const int kc = std::min(kKc, k - pc);
      const bool first = pc == 0;
      pack_b(b, ldb, trans_b, pc, kc, jc, nc, bpack.data());
      for (int ic = 0; ic < m; ic += kMc) {
        const int mc = std::min(kMc, m - ic);
        pack_a(a, lda, trans_a, ic, mc, pc, kc, apack.data());
        for (int js = 0; js * kNr < nc; ++js) {
          const float* bp = bpack.data() + static_cast<size_t>(js) * kc * kNr;
          const int width = std::min(kNr, nc - js * kNr);
          for (int is = 0; is * kMr < mc; ++is) {
            const float* ap = apack.data() + static_cast<size_t>(is) * kc * kMr;
            const int height = std::min(kMr, mc - is * kMr);
            micro_kernel(kc, ap, bp, acc);
            for (int i = 0; i < height; ++i) {
              const int row = ic + is * kMr + i;
              for (int j = 0; j < width; ++j) {
                const int col = jc + js * kNr + j;
                float& out = c_at(row, col);
                const float prior = first ? (beta == 0.0f ? 0.0f : beta * out) : out;
                out = prior + alpha * acc[i * kNr + j];
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace jobctl::train
