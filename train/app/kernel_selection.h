// jobctl-train's choice of CPU kernels, made before anything else in main(): OpenBLAS picks its
// kernels (its "core") once, when the library is loaded, from the CPU model it recognises or from
// OPENBLAS_CORETYPE. When it fell back to a generic core on a CPU that can run better ones
// (train/spec/blas_cores.h decides), the process executes itself again, once, with
// OPENBLAS_CORETYPE set to the better core. An OPENBLAS_CORETYPE already set by the user or the
// machine is never replaced.
//
// Then the kernels in use are checked against the portable GEMM (train/kernels/gemm_self_check.h);
// when the core this selection asked for fails the check, the process executes itself once more
// without it, on the core OpenBLAS chose by itself, and says so.
//
// The environment between the executions (each variable is set by the one before):
//   JOBCTL_BLAS_LIBRARY_CORE  the core OpenBLAS chose by itself; its presence marks a re-execution,
//                             which never selects again (no loop)
//   JOBCTL_BLAS_SELECTION     why the core was selected (a sentence, for the start event)
//   JOBCTL_BLAS_FALLBACK      set on the fall-back execution: why the selected core was dropped
// Test hooks (the process tests; never set in production):
//   JOBCTL_TEST_CORETYPE_IS_LIBRARYS=1  the OPENBLAS_CORETYPE in the environment stands for the
//                             library's own detection, not a user's choice: a test forces a generic
//                             core (Prescott) and sees the selection replace it, through the same
//                             code path a real fall-back of OpenBLAS takes; the fall-back execution
//                             restores it instead of unsetting it
//   JOBCTL_TEST_GEMM_CHECK_TOLERANCE=x  the self-check's tolerance (0 makes any rounding difference
//                             a failure, so the fall-back path runs for real)
//
// Thread safety: call once from main(), before any thread starts.
#pragma once

#include <string>

namespace jobctl::train {

struct KernelReport {
  std::string kernels;     // blas_description(): "OpenBLAS 0.3.21 (Cooperlake)", "portable"
  std::string selection;   // how they were chosen, one or two sentences
  std::string self_check;  // GemmCheckResult::summary(), or why none ran
  bool check_passed = true;
};

// May not return: executes the program again (argv as main() got it) when a better core is to
// be loaded or a selected one failed its check. Returns the kernels this process runs.
KernelReport select_kernels(char** argv);

}  // namespace jobctl::train
