// Which OpenBLAS kernels ("cores", as OpenBLAS's DYNAMIC_ARCH names them) fit a CPU, from the CPU's
// features alone: the table jobctl-train selects its kernels by (train/app/kernel_selection.h) and
// the cost model computes a CPU's peak by (cost/cpu_peak.h), so both mean the same kernels.
//
//   AVX-512 F/BW/DQ/VL + AVX512-BF16   Cooperlake (OpenBLAS 0.3.21's newest x86 core: the SkylakeX
//                                      SGEMM plus BF16 kernels; AMX has no core of its own there)
//   AVX-512 F/BW/DQ/VL                 SkylakeX
//   AVX2 + FMA                         Zen on AMD, Haswell otherwise
//   AVX                                Sandybridge
//   anything less                      none: OpenBLAS's own choice stands
//
// The features must be usable, not only present: the caller also checks that the OS saves the
// YMM/ZMM registers (XCR0), as OpenBLAS itself does.
//
// The rule that keeps a user's choice: an OPENBLAS_CORETYPE already in the environment is never
// replaced, and only a library choice without AVX2 kernels (a generic core such as Prescott, which
// OpenBLAS falls back to on a CPU model it does not know) is replaced, and only by a better one.
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace jobctl::train {

struct CpuFeatures {
  bool amd = false;  // vendor "AuthenticAMD"
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512dq = false;
  bool avx512vl = false;
  bool avx512_bf16 = false;
  bool amx_tile = false;
  bool amx_bf16 = false;

  bool avx512() const { return avx512f && avx512bw && avx512dq && avx512vl; }
};

struct BlasCore {
  std::string_view name;  // OpenBLAS's name, as OPENBLAS_CORETYPE takes it and openblas_get_corename() says it
  int vector_bits = 128;  // width of its SGEMM kernels' vectors
  bool fma = false;       // whether they use fused multiply-add
};

// The row of the table above for `cpu`; nullopt when the CPU has nothing better than SSE.
std::optional<BlasCore> best_blas_core(const CpuFeatures& cpu);

// The table's row for an OpenBLAS core name (case-insensitive); nullopt for cores outside it
// (Prescott, Core2, Nehalem, Atom, ...: the generic SSE kernels).
std::optional<BlasCore> find_blas_core(std::string_view name);

struct BlasCoreDecision {
  std::optional<std::string> request;  // the core to set OPENBLAS_CORETYPE to; nullopt: keep the library's
  std::string reason;                  // one sentence, for the start event
};

// What to do, given the CPU, the core OpenBLAS chose by itself and the OPENBLAS_CORETYPE already
// in the environment (nullopt when unset; an empty value counts as unset, as OpenBLAS reads it).
BlasCoreDecision decide_blas_core(const CpuFeatures& cpu, std::string_view library_core,
                                  const std::optional<std::string>& environment_coretype);

// "avx2 fma avx512f ..." (the features that are set), for messages.
std::string describe(const CpuFeatures& cpu);

}  // namespace jobctl::train
