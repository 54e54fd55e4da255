#include "cost/gpu_specs.h"

#include "base/strings.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace jobctl::cost {

namespace {

constexpr std::string_view kDesign = "seed facts (docs/cost-model.md) (NVIDIA datasheets, dense)";
constexpr std::string_view kDatasheet = "NVIDIA datasheet, dense figures (no sparsity)";

// name, fp32, tf32, fp16, bf16, memory GB, bandwidth GB/s, TDP W, source
constexpr std::array kSpecs{
    GpuSpec{"T4", 8.1, 0, 65, 0, 16, 320, 70, kDesign},
    GpuSpec{"V100", 15.7, 0, 125, 0, 16, 900, 300, kDesign},
    GpuSpec{"V100-32GB", 15.7, 0, 125, 0, 32, 900, 300, kDatasheet},
    GpuSpec{"A100", 19.5, 156, 312, 312, 40, 1555, 400, kDesign},
    GpuSpec{"A100-80GB", 19.5, 156, 312, 312, 80, 2039, 400, kDesign},
    GpuSpec{"L4", 30.3, 60, 121, 121, 24, 300, 72, kDesign},
    GpuSpec{"RTX4090", 82.6, 82.6, 165, 165, 24, 1008, 450, kDesign},
    GpuSpec{"H100", 66.9, 494.5, 989, 989, 80, 3350, 700, kDesign},
    GpuSpec{"H200", 67, 494.5, 989, 989, 141, 4800, 700, kDesign},
    GpuSpec{"A10", 31.2, 62.5, 125, 125, 24, 600, 150, kDatasheet},
    // AWS's A10G (g5) is an A10 variant without a public datasheet; A10 compute figures, AWS's
    // memory (24 GB) and board power.
    GpuSpec{"A10G", 31.2, 62.5, 125, 125, 24, 600, 300,
            "approximated by the NVIDIA A10 datasheet (dense); AWS g5 documentation for memory"},
    GpuSpec{"L40S", 91.6, 183, 362, 362, 48, 864, 350, kDatasheet},
    GpuSpec{"A6000", 38.7, 77.4, 154.8, 154.8, 48, 768, 300, kDatasheet},
    GpuSpec{"RTX6000", 16.3, 0, 130.5, 0, 24, 672, 295, kDatasheet},
    GpuSpec{"GH200", 67, 494.5, 989, 989, 96, 4000, 700, kDatasheet},
    // One GK210 die of a K80 board (AWS p2 counts dies as GPUs).
    GpuSpec{"K80", 4.37, 0, 0, 0, 12, 240, 150, "NVIDIA K80 datasheet, per GK210 die (boost)"},
    GpuSpec{"cpu", 0.5, 0, 0, 0, 0, 50, 150,
            "jobctl assumption: a multi-core AVX2 server CPU; corrected by calibration"},
};

struct Alias {
  std::string_view key;   // normalised spelling
  std::string_view name;  // canonical name
};

constexpr std::array kAliases{
    Alias{"h100sxm", "H100"},        Alias{"h100sxm5", "H100"},     Alias{"h100pcie", "H100"},
    Alias{"h10080gb", "H100"},       Alias{"a100sxm4", "A100"},     Alias{"a10040gb", "A100"},
    Alias{"a100sxm440gb", "A100"},   Alias{"a100pcie", "A100"},     Alias{"a10080gbsxm4", "A100-80GB"},
    Alias{"a100sxm480gb", "A100-80GB"}, Alias{"v10016gb", "V100"},  Alias{"v100sxm2", "V100"},
    Alias{"rtxa6000", "A6000"},      Alias{"quadrortx6000", "RTX6000"}, Alias{"h200sxm", "H200"},
    Alias{"k80", "K80"},             Alias{"none", "cpu"},
};

// Lower-case, drop vendor words and separators: "NVIDIA Tesla V100-SXM2" -> "v100sxm2".
std::string normalise(std::string_view name) {
  std::string s;
  s.reserve(name.size());
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) s.push_back(static_cast<char>(std::tolower(u)));
  }
  for (std::string_view word : {"nvidia", "tesla", "geforce"}) {
    if (s.starts_with(word) && s.size() > word.size()) s.erase(0, word.size());
  }
  return s;
}

const GpuSpec* lookup_canonical(std::string_view canonical) {
  for (const auto& spec : kSpecs)
    if (spec.name == canonical) return &spec;
  return nullptr;
}

}  // namespace

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
  }
  return "fp32";
}

std::optional<Precision> parse_precision(std::string_view name) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
    if (to_string(p) == name) return p;
  return std::nullopt;
}

std::span<const GpuSpec> gpu_specs() { return kSpecs; }

std::string canonical_gpu_name(std::string_view name, double memory_gb) {
  const std::string key = normalise(name);
  std::string_view canonical;
  for (const auto& spec : kSpecs) {
    if (normalise(spec.name) == key) {
      canonical = spec.name;
      break;
    }
  }
  if (canonical.empty()) {
    for (const auto& alias : kAliases) {
      if (alias.key == key) {
        canonical = alias.name;
        break;
      }
    }
  }
  if (canonical.empty()) return std::string(trim(name));
  // A bare base-model name with the larger variant's memory is the larger variant.
  if (canonical == "A100" && memory_gb > 48) return "A100-80GB";
  if (canonical == "V100" && memory_gb > 20) return "V100-32GB";
  return std::string(canonical);
}

const GpuSpec* find_gpu(std::string_view name) {
  return lookup_canonical(canonical_gpu_name(name));
}

double peak_tflops(const GpuSpec& gpu, Precision precision) {
  double v = 0;
  switch (precision) {
    case Precision::fp32: v = gpu.fp32_tflops; break;
    case Precision::tf32: v = gpu.tf32_tflops; break;
    case Precision::fp16: v = gpu.fp16_tflops; break;
    case Precision::bf16: v = gpu.bf16_tflops; break;
  }
  return std::max(v, gpu.fp32_tflops);
}

}  // namespace jobctl::cost
