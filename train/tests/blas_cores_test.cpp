// The kernels table (train/spec/blas_cores.h): which OpenBLAS core a CPU's features call for, when
// the library's own choice is replaced, and that an OPENBLAS_CORETYPE already set never is; the
// cpuid reading against the kernel's /proc/cpuinfo; the GEMM self-check on this machine.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "train/app/cpu_features.h"
#include "train/kernels/gemm.h"
#include "train/kernels/gemm_self_check.h"
#include "train/spec/blas_cores.h"

namespace jobctl::train {
namespace {

CpuFeatures avx2_fma(bool amd = false) {
  CpuFeatures f;
  f.amd = amd;
  f.avx = f.avx2 = f.fma = true;
  return f;
}

CpuFeatures avx512(bool bf16 = false) {
  CpuFeatures f = avx2_fma();
  f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = true;
  f.avx512_bf16 = bf16;
  return f;
}

std::string best(const CpuFeatures& f) {
  auto c = best_blas_core(f);
  return c ? std::string(c->name) : "";
}

TEST(BlasCores, TheTable) {
  CpuFeatures sapphire_rapids = avx512(true);
  sapphire_rapids.amx_tile = sapphire_rapids.amx_bf16 = true;
  EXPECT_EQ(best(sapphire_rapids), "Cooperlake");
  EXPECT_EQ(best(avx512(true)), "Cooperlake");
  EXPECT_EQ(best(avx512()), "SkylakeX");
  CpuFeatures partial = avx512();
  partial.avx512vl = false;  // AVX-512 F without all of BW/DQ/VL: OpenBLAS's SkylakeX needs them
  EXPECT_EQ(best(partial), "Haswell");
  EXPECT_EQ(best(avx2_fma()), "Haswell");
  EXPECT_EQ(best(avx2_fma(/*amd=*/true)), "Zen");
  CpuFeatures no_fma = avx2_fma();
  no_fma.fma = false;
  EXPECT_EQ(best(no_fma), "Sandybridge");
  CpuFeatures sse;
  EXPECT_EQ(best(sse), "");
  EXPECT_EQ(find_blas_core("skylakex")->vector_bits, 512);
  EXPECT_EQ(find_blas_core("HASWELL")->vector_bits, 256);
  EXPECT_FALSE(find_blas_core("Prescott"));
}

TEST(BlasCores, AGenericLibraryChoiceIsReplaced) {
  auto d = decide_blas_core(avx512(true), "Prescott", std::nullopt);
  ASSERT_TRUE(d.request);
  EXPECT_EQ(*d.request, "Cooperlake");
  EXPECT_NE(d.reason.find("OpenBLAS chose Prescott"), std::string::npos) << d.reason;
  EXPECT_EQ(decide_blas_core(avx512(), "Core2", std::nullopt).request.value_or(""), "SkylakeX");
  EXPECT_EQ(decide_blas_core(avx2_fma(true), "Prescott", std::nullopt).request.value_or(""), "Zen");
  EXPECT_EQ(decide_blas_core(avx2_fma(), "Sandybridge", std::nullopt).request.value_or(""), "Haswell");
  // An empty OPENBLAS_CORETYPE is no choice (OpenBLAS ignores it too).
  EXPECT_EQ(decide_blas_core(avx512(), "Prescott", std::string()).request.value_or(""), "SkylakeX");
}

TEST(BlasCores, NeverOverridesTheEnvironment) {
  for (const char* set : {"Prescott", "Haswell", "SkylakeX", "nonsense"}) {
    auto d = decide_blas_core(avx512(true), "Prescott", std::string(set));
    EXPECT_FALSE(d.request) << set;
    EXPECT_NE(d.reason.find(std::string("OPENBLAS_CORETYPE=") + set), std::string::npos) << d.reason;
  }
}

TEST(BlasCores, KeepsALibraryChoiceWithAvx2Kernels) {
  // OpenBLAS 0.3.21 on a Zen 5 picks Haswell: kept, though the table would say Cooperlake.
  EXPECT_FALSE(decide_blas_core(avx512(true), "Haswell", std::nullopt).request);
  EXPECT_FALSE(decide_blas_core(avx512(true), "Zen", std::nullopt).request);
  EXPECT_FALSE(decide_blas_core(avx512(), "Cooperlake", std::nullopt).request);
  EXPECT_FALSE(decide_blas_core(avx2_fma(), "SkylakeX", std::nullopt).request);
  // Nothing better than what it has: kept.
  EXPECT_FALSE(decide_blas_core(CpuFeatures{}, "Prescott", std::nullopt).request);
  CpuFeatures avx_only;
  avx_only.avx = true;
  EXPECT_FALSE(decide_blas_core(avx_only, "Sandybridge", std::nullopt).request);
}

std::set<std::string> proc_cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

TEST(CpuFeatures, AgreeWithTheKernelsFlags) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "cpuid is x86-64";
#endif
  const auto flags = proc_cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags";
  const CpuFeatures f = detect_cpu_features();
  // Linux lists a feature only when it also enabled the registers' state (XCR0), as we require.
  EXPECT_EQ(f.avx, flags.count("avx") == 1);
  EXPECT_EQ(f.avx2, flags.count("avx2") == 1);
  EXPECT_EQ(f.fma, flags.count("fma") == 1);
  EXPECT_EQ(f.avx512f, flags.count("avx512f") == 1);
  EXPECT_EQ(f.avx512bw, flags.count("avx512bw") == 1);
  EXPECT_EQ(f.avx512dq, flags.count("avx512dq") == 1);
  EXPECT_EQ(f.avx512vl, flags.count("avx512vl") == 1);
  EXPECT_EQ(f.avx512_bf16, flags.count("avx512_bf16") == 1);
  EXPECT_EQ(f.amx_tile, flags.count("amx_tile") == 1);
  EXPECT_EQ(f.amx_bf16, flags.count("amx_bf16") == 1);
}

TEST(GemmSelfCheck, TheLoadedKernelsPassAndAZeroToleranceSeesRounding) {
  const GemmCheckResult r = check_gemm_kernels();
  EXPECT_TRUE(r.passed) << r.summary();
  EXPECT_EQ(r.products, 7);
  EXPECT_EQ(r.summary().rfind("passed", 0), 0u) << r.summary();
  if (have_blas()) {
    // OpenBLAS sums in another order than the portable GEMM: differences of rounding, which the
    // tolerance admits and a zero tolerance does not (the check compares, it does not assume).
    const GemmCheckResult strict = check_gemm_kernels(0);
    EXPECT_GT(strict.worst, 0) << strict.summary();
    EXPECT_FALSE(strict.passed);
    EXPECT_LE(strict.worst, kGemmCheckTolerance);
  }
}

}  // namespace
}  // namespace jobctl::train
