// What the CPU this process runs on can do (train/spec/blas_cores.h's CpuFeatures), read with the
// cpuid instruction: a feature counts only when the OS also saves its registers (XCR0's YMM bits
// for AVX/AVX2/FMA, its opmask and ZMM bits for AVX-512, its tile bits for AMX). All false on
// other architectures.
//
// Thread safety: pure (reads the CPU).
#pragma once

#include "train/spec/blas_cores.h"

namespace jobctl::train {

CpuFeatures detect_cpu_features();

}  // namespace jobctl::train
