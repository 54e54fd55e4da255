// GPU facts the cost model needs: peak throughput by precision, memory, bandwidth and power.
//
// The table is built in (gpu_specs.cpp names the source of every row). Peak figures are dense
// (no structured sparsity). A precision a GPU has no fast path for (TF32 before Ampere, BF16 on
// Volta and Turing, FP16 tensor cores on Kepler) is stored as 0 and priced at the FP32 rate, since
// the work still runs, only in FP32.
//
// "cpu" is a pseudo-device so that CPU-only workers can be estimated and priced like GPUs; its
// throughput is a conservative multi-core AVX2 figure that efficiency calibration corrects with
// use, and its memory is whatever the worker reports (0 in the table).
//
// Thread safety: the table is immutable; all functions are pure.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace jobctl::cost {

enum class Precision { fp32, tf32, fp16, bf16 };

std::string_view to_string(Precision p);
std::optional<Precision> parse_precision(std::string_view name);

struct GpuSpec {
  std::string_view name;        // canonical model name: "V100", "A100-80GB", "RTX4090", "cpu"
  double fp32_tflops = 0;
  double tf32_tflops = 0;       // 0: no TF32 path (runs at the FP32 rate)
  double fp16_tflops = 0;       // dense tensor-core FP16; 0: none
  double bf16_tflops = 0;       // dense tensor-core BF16; 0: none
  double memory_gb = 0;         // per GPU; 0 for "cpu" (the worker reports it)
  double bandwidth_gbs = 0;     // memory bandwidth, GB/s
  double tdp_w = 0;             // board power, W
  std::string_view source;      // where the figures come from
};

// Every row of the built-in table.
std::span<const GpuSpec> gpu_specs();

// Canonical form of a GPU model name as clouds and users spell it: case, spaces, '-', '_' and
// vendor words ("NVIDIA", "Tesla", "GeForce") do not matter, and known aliases map to the table's
// name ("H100-SXM" -> "H100", "RTX 4090" -> "RTX4090"). A plain "A100" or "V100" with more memory
// than the base model (memory_gb, when given) becomes "A100-80GB" / "V100-32GB". Names the table
// does not know come back trimmed but otherwise unchanged.
std::string canonical_gpu_name(std::string_view name, double memory_gb = 0);

// The spec for a GPU model (any spelling canonical_gpu_name accepts); nullopt when unknown.
const GpuSpec* find_gpu(std::string_view name);

// Peak TFLOPS for a precision, falling back to FP32 where the GPU has no faster path.
double peak_tflops(const GpuSpec& gpu, Precision precision);

}  // namespace jobctl::cost
