#include "train/app/kernel_selection.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "train/app/cpu_features.h"
#include "train/kernels/gemm.h"
#include "train/kernels/gemm_self_check.h"
#include "train/spec/blas_cores.h"

namespace jobctl::train {

namespace {

constexpr char kCoreType[] = "OPENBLAS_CORETYPE";
constexpr char kLibraryCore[] = "JOBCTL_BLAS_LIBRARY_CORE";
constexpr char kSelection[] = "JOBCTL_BLAS_SELECTION";
constexpr char kFallback[] = "JOBCTL_BLAS_FALLBACK";
constexpr char kTestCoreTypeIsLibrarys[] = "JOBCTL_TEST_CORETYPE_IS_LIBRARYS";
constexpr char kTestTolerance[] = "JOBCTL_TEST_GEMM_CHECK_TOLERANCE";

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  return std::string(v);
}

// Returns only when the execution failed; the message says why.
std::string exec_self(char** argv) {
  ::execv("/proc/self/exe", argv);
  return std::string("executing /proc/self/exe failed: ") + std::strerror(errno);
}

double check_tolerance() {
  if (auto t = env(kTestTolerance)) {
    char* end = nullptr;
    const double v = std::strtod(t->c_str(), &end);
    if (end && *end == '\0' && v >= 0) return v;
  }
  return kGemmCheckTolerance;
}

}  // namespace

KernelReport select_kernels(char** argv) {
  KernelReport report;
  if (!have_blas()) {
    report.kernels = blas_description();
    report.selection = "the portable GEMM (this build has no OpenBLAS)";
    report.self_check = "not needed: the portable GEMM is the reference";
    return report;
  }
  const bool test_hook = env(kTestCoreTypeIsLibrarys).value_or("") == "1";
  const auto library_core = env(kLibraryCore);
  if (!library_core) {
    // The first execution: OpenBLAS has loaded whatever it chose (or was told) already.
    const auto coretype = env(kCoreType);
    const std::string chosen = blas_core();
    const auto decision = decide_blas_core(detect_cpu_features(), chosen, test_hook ? std::nullopt : coretype);
    if (decision.request) {
      ::setenv(kLibraryCore, chosen.c_str(), 1);
      ::setenv(kSelection, decision.reason.c_str(), 1);
      ::setenv(kCoreType, decision.request->c_str(), 1);
      const std::string why = exec_self(argv);
      // Still here: go on with the library's kernels, which are loaded, and leave the
      // environment as it was.
      if (coretype) ::setenv(kCoreType, coretype->c_str(), 1); else ::unsetenv(kCoreType);
      ::unsetenv(kLibraryCore);
      ::unsetenv(kSelection);
      report.selection = decision.reason + ", but " + why + "; kept " + chosen;
    } else {
      report.selection = decision.reason;
    }
  } else {
    const auto fallback = env(kFallback);
    report.selection = fallback ? *fallback : env(kSelection).value_or("selected " + env(kCoreType).value_or("?"));
    const auto requested = env(kCoreType);
    if (!fallback && requested && blas_core() != *requested)
      report.selection += "; OpenBLAS loaded " + blas_core() + " instead of " + *requested;
  }

  const GemmCheckResult check = check_gemm_kernels(check_tolerance());
  report.self_check = check.summary();
  report.check_passed = check.passed;
  if (!check.passed && library_core && !env(kFallback)) {
    // The selected core computes wrong products here: back to the library's own choice.
    const std::string why = "the selected " + blas_core() + " kernels' self-check " + check.summary() +
                            "; back to OpenBLAS's own " + *library_core;
    ::setenv(kFallback, why.c_str(), 1);
    if (test_hook) ::setenv(kCoreType, library_core->c_str(), 1); else ::unsetenv(kCoreType);
    report.selection = why + ", but " + exec_self(argv) + "; continues on " + blas_core();
  }
  report.kernels = blas_description();
  return report;
}

}  // namespace jobctl::train
