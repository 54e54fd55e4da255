// What one core of this machine sustains on the models' products, measured at start so that a
// CPU's peak is known from what its kernels do and not only from its clock and vector width
// (cost/cpu_peak.h: a VM reports its base clock, a laptop the clock it idles at, while the cores
// run turbo). The products are the self-check's (model_gemm_shapes(), gemm_self_check.h) through
// gemm_single_thread(): OpenBLAS with the kernels jobs load, on the calling thread.
//
// Rounds of all the products, each product timed; its best time over the rounds counts, so a
// round slowed by another process or a clock still ramping up does not lower the figure, and the
// figure is the fastest product's rate: the rate the kernels reach on the models' shapes (the
// thin ones, conv1's k = 9, run far slower and say nothing about the core). A core's rate times
// the cores is at least what the kernels reach with every core at work (threads scale at best
// linearly, and one busy core turbos at least as high as all of them): an upper bound of the
// machine's GEMM throughput on these shapes, which is what the daemon's plausibility check of
// step times builds on (cost/cpu_peak.h, cpu_machine_peak_tflops).
//
// Thread safety: runs on the calling thread; call it when nothing else computes.
#pragma once

namespace jobctl::train {

struct GemmThroughput {
  double core_gflops = 0;  // the fastest product's 2mnk / its best time, one thread
  int rounds = 0;
  double seconds = 0;      // spent measuring
};

inline constexpr int kMinThroughputRounds = 5;

// At least kMinThroughputRounds rounds, and rounds until `budget_seconds` are spent.
GemmThroughput measure_core_gemm_throughput(double budget_seconds = 0.1);

}  // namespace jobctl::train
