// What a CPU can compute at most, from what the worker reports of it, so that a CPU-only machine is
// estimated by its own cores rather than by one assumed figure ("cpu" in gpu_specs.h), and the
// device key calibration learns it under.
//
//   peak FP32 FLOP/s = cores x clock x (vector bits / 32 lanes) x 2 (an FMA is two FLOPs, when the
//                      CPU has FMA) x 2 (two vector FMA pipes per core)
// The vector width and FMA are those of the kernels jobctl-train runs on the CPU — the OpenBLAS
// core train/spec/blas_cores.h's table selects from the CPU's features, the same table
// jobctl-train selects by (512 bits with FMA for AVX-512, 256 with FMA for AVX2, 256 without for
// AVX) — limited to the width the FMA pipes have: AMD cores with AVX-512 (Zen 4) execute 512-bit
// operations in two 256-bit halves. 128 for SSE / NEON. A worker whose jobs are pinned to a core
// (OPENBLAS_CORETYPE in its environment) reports that core's width instead (pin_to_blas_core). E.g. this repository's 2-core AMD EPYC VM (AVX-512, FMA, 2.6 GHz):
// 2 x 2.6e9 x 8 x 2 x 2 = 0.166 TFLOP/s. Turbo, memory bandwidth and BLAS efficiency are left to
// calibration, which is keyed per (CPU model, cores): the same model with a different core count
// is another machine.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>

#include "cost/gpu_specs.h"

namespace jobctl::cost {

struct CpuFacts {
  std::string model;        // /proc/cpuinfo "model name", e.g. "AMD EPYC 7B13"
  std::string vendor;       // "GenuineIntel", "AuthenticAMD", "ARM", ... (may be empty)
  int cores = 0;            // logical CPUs the worker may use
  int vector_bits = 0;      // widest SIMD the CPU has: 512 (avx512f), 256 (avx2/avx), 128 (sse2/neon)
  bool fma = false;
  double mhz = 0;           // clock, MHz (0: unknown)
  // What the worker measured its cores to sustain on the models' GEMMs at start, FP32 TFLOP/s (one
  // core's best round x cores: train/kernels/gemm_throughput.h); 0: not measured (older workers).
  double measured_tflops = 0;
};

// The width the kernels' FMA pipes really have (the rule above).
int effective_vector_bits(const CpuFacts& cpu);
// Whether those kernels use fused multiply-add.
bool kernels_use_fma(const CpuFacts& cpu);

// `cpu` as its kernels are when OpenBLAS is told to load `core` (an OPENBLAS_CORETYPE value):
// that core's width and FMA from the table; a core outside it (Prescott, Core2, ...: the generic
// SSE kernels) 128 bits without FMA. An empty `core` leaves `cpu` as it is.
void pin_to_blas_core(CpuFacts& cpu, std::string_view core);

// Peak FP32 TFLOP/s by the formula above; 0 when cores or vector width are unknown. An unknown
// clock counts as 2.5 GHz.
double cpu_peak_tflops(const CpuFacts& cpu);

// How far the counted FLOP rate of an honest training run may exceed a measured GEMM rate
// (cpu_machine_peak_tflops): 1.5 because a step is counted as 3 x its forward FLOPs
// (train/spec/model_stats.h) while the first layer's input gradient is never computed (an MLP on
// 784 inputs does about 2/3 of the count), times 4/3 for a measurement below what the kernels
// reach in a job (the check's 36-row products run slower than a 128-row batch; a core shared at
// start, a clock not yet at its turbo).
inline constexpr double kMeasuredPeakHeadroom = 2.0;

// The peak a CPU machine is timed (placement) and calibrated (the daemon's plausibility check of
// step times) at: the formula's, or the measurement x kMeasuredPeakHeadroom when that is higher.
// The formula stands for the highest the CPU could do at its reported clock; the measurement
// covers what the report leaves out (a VM's base clock under a turbo, a laptop's idle clock), so
// a run faster than the formula's peak is not refused as implausible. A worker that measured
// nothing is timed by the formula alone.
double cpu_machine_peak_tflops(const CpuFacts& cpu);

// The device name calibration keys a CPU machine under: "cpu/<model>/<cores>" ("cpu/AMD EPYC/2");
// "cpu" when the model is unknown.
std::string cpu_device_key(std::string_view model, int cores);

// A device as people read it: a CPU key as "CPU, 2 cores" ("CPU" when its cores are unknown), a
// GPU model with its count, "H100-SXM x8". `count` is the devices a machine or a job has.
std::string device_label(std::string_view device, int count);

// A CPU machine as a row of the device table: the generic "cpu" row (gpu_specs.h) named `key`
// and running at `peak_tflops` FP32 (the other precisions fall back to it, peak_tflops()), so a
// machine is timed (placement) and calibrated (the daemon) at one and the same peak. `key` must
// outlive the row.
GpuSpec cpu_machine_spec(std::string_view key, double peak_tflops);

}  // namespace jobctl::cost
