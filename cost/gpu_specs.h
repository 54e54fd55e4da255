// GPU identity and facts: the one table of GPU models jobctl knows, and the one function that maps
// any name of a GPU (what nvidia-smi prints, what a price catalog lists, what a person types) to it.
//
// A row is one variant: a model whose figures differ from its siblings' (an H100 SXM, an H100 PCIe
// and an H100 NVL are three rows; an A100 with 40 or 80 GB, as SXM or PCIe, four). Rows of one
// family share its name ("A100"); a variant's canonical name adds what sets it apart
// ("A100-80GB-PCIe", "H100-NVL", "V100-32GB"). Peak figures are dense (no structured sparsity). A
// precision a GPU has no fast path for (TF32 before Ampere, BF16 on Volta and Turing, FP16 tensor
// cores on Kepler and Maxwell) is stored as 0 and priced at the FP32 rate, since the work still
// runs, only in FP32. gpu_specs.cpp names the source of every row.
//
// Names. A name is read as tokens (case, spaces, '-', '_', '.' and the boundaries between letters
// and digits do not matter; leading vendor words "NVIDIA", "Tesla", "GeForce", "Quadro" are
// dropped): a family ("A100", "RTX 4090", "4090") and optional qualifiers — a memory ("80GB",
// "80G"), a form factor ("SXM", "SXM4", "PCIe", "NVL"; "Mega" is SXM), a memory type ("HBM3",
// ignored). So "NVIDIA A100-SXM4-80GB", "a100 80gb sxm" and "A100-80GB-SXM" are the same variant.
//
// Two uses of a name:
//  - identify_gpu: what one device or catalog row IS — always one variant. Where the name leaves
//    a choice, the memory reported with it picks the nearest variant, then the family's first row
//    (SXM before PCIe: "H100" is an H100 SXM, "A100" an A100 40 GB SXM).
//  - parse_gpu_request: what a job ASKS for (`resources.gpu`) — a set of variants. "A100" is any
//    A100, "A100-80GB" only the 80 GB ones, "H100-PCIe" only that one; "any" every device, "cpu"
//    CPU-only machines. A name that is no known family, or a memory no variant of the family has,
//    is an error naming `resources.gpu` and the closest known names.
//
// "cpu" is a pseudo-device so that CPU-only workers can be estimated and priced like GPUs; its
// row is a conservative multi-core figure, used only where the machine's own CPU is not known
// (cost/cpu_peak.h computes a machine's peak from its cores and vector width).
//
// Thread safety: the table is immutable; all functions are pure.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"

namespace jobctl::cost {

enum class Precision { fp32, tf32, fp16, bf16 };

std::string_view to_string(Precision p);
std::optional<Precision> parse_precision(std::string_view name);

struct GpuSpec {
  std::string_view name;        // canonical variant name: "H100-SXM", "A100-80GB-PCIe", "RTX4090", "cpu"
  std::string_view family;      // "H100", "A100", "RTX4090", "cpu"
  std::string_view form;        // "SXM", "PCIe", "NVL"; empty where the family has one form
  double fp32_tflops = 0;
  double tf32_tflops = 0;       // 0: no TF32 path (runs at the FP32 rate)
  double fp16_tflops = 0;       // dense tensor-core FP16; 0: none
  double bf16_tflops = 0;       // dense tensor-core BF16; 0: none
  double memory_gb = 0;         // per GPU, as the family's variants are named (80 for "80GB"); 0 for "cpu"
  double bandwidth_gbs = 0;     // memory bandwidth, GB/s
  double tdp_w = 0;             // board power, W
  std::string_view source;      // where the figures come from
};

// Every row of the built-in table, families together, each family's default variant first.
std::span<const GpuSpec> gpu_specs();

// The variant a device or catalog row is (see the header comment); nullptr when the name is no
// known family or carries a qualifier this table cannot read. `memory_gb` (per GPU, e.g. nvidia-smi's
// MiB / 1024) picks among variants the name leaves open; 0: unknown.
const GpuSpec* identify_gpu(std::string_view name, double memory_gb = 0);

// Canonical name of a device or catalog GPU name: identify_gpu(name, memory_gb)->name, or the
// name trimmed when unknown.
std::string canonical_gpu_name(std::string_view name, double memory_gb = 0);

// identify_gpu without a memory.
const GpuSpec* find_gpu(std::string_view name);

// What a job asks for in resources.gpu.
struct GpuRequest {
  enum class Kind : unsigned char { any, cpu, model };
  Kind kind = Kind::any;
  std::string_view family;  // kind == model
  double memory_gb = 0;     // 0: any memory
  std::string_view form;    // empty: any form factor

  // Whether a device of this variant satisfies the request. "any" takes every row, the "cpu"
  // pseudo-device included; "cpu" takes only that.
  bool matches(const GpuSpec& gpu) const;
  // The canonical text: "any", "cpu", "A100", "A100-80GB", "H100-PCIe", "A100-80GB-PCIe".
  std::string name() const;
};

// Parses resources.gpu. Errors: invalid_argument with field "resources.gpu" and a message that
// lists the closest known names.
[[nodiscard]] Expected<GpuRequest> parse_gpu_request(std::string_view text);

// Up to `n` known names (families, variants, family-memory pairs) nearest to `text` by edit
// distance on their normalised spelling, nearest first.
std::vector<std::string> closest_gpu_names(std::string_view text, size_t n = 3);

// Peak TFLOPS for a precision, falling back to FP32 where the GPU has no faster path.
double peak_tflops(const GpuSpec& gpu, Precision precision);

// The figures a GPU the table does not know is timed and priced at (docs/cost-model.md, "Unknown
// GPUs"): for each figure the table's least favourable GPU row (the cpu row aside) — the lowest
// peak at each precision (0 where some row has no fast path: the FP32 rate), the lowest
// bandwidth, the highest board power — with the memory the device reports. Never faster than any
// GPU jobctl knows, so an estimate made with it is an upper bound on time. `name` becomes the
// spec's name and family (a string_view: the caller keeps the text alive).
GpuSpec unknown_gpu_spec(std::string_view name, double memory_gb);

}  // namespace jobctl::cost
