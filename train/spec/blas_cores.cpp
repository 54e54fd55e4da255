#include "train/spec/blas_cores.h"

#include <array>
#include <cctype>

namespace jobctl::train {

namespace {

// Best first; vector width and FMA of the SGEMM kernels each core runs.
constexpr std::array<BlasCore, 5> kCores = {{
    {"Cooperlake", 512, true},
    {"SkylakeX", 512, true},
    {"Haswell", 256, true},
    {"Zen", 256, true},
    {"Sandybridge", 256, false},
}};

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

// Orders cores by what their kernels can do: width first, then FMA, then the extra BF16 kernels.
int rank(const std::optional<BlasCore>& core) {
  if (!core) return 0;
  return core->vector_bits / 64 * 4 + (core->fma ? 2 : 0) + (core->name == "Cooperlake" ? 1 : 0);
}

}  // namespace

std::optional<BlasCore> find_blas_core(std::string_view name) {
  for (const BlasCore& c : kCores)
    if (same_name(c.name, name)) return c;
  return std::nullopt;
}

std::optional<BlasCore> best_blas_core(const CpuFeatures& cpu) {
  if (cpu.avx512() && cpu.avx512_bf16) return find_blas_core("Cooperlake");
  if (cpu.avx512()) return find_blas_core("SkylakeX");
  if (cpu.avx2 && cpu.fma) return find_blas_core(cpu.amd ? "Zen" : "Haswell");
  if (cpu.avx) return find_blas_core("Sandybridge");
  return std::nullopt;
}

BlasCoreDecision decide_blas_core(const CpuFeatures& cpu, std::string_view library_core,
                                  const std::optional<std::string>& environment_coretype) {
  if (environment_coretype && !environment_coretype->empty())
    return {std::nullopt, "OPENBLAS_CORETYPE=" + *environment_coretype + " was set before jobctl-train started; kept"};
  const auto best = best_blas_core(cpu);
  const auto chosen = find_blas_core(library_core);
  if (!best) return {std::nullopt, "the CPU has no AVX; OpenBLAS's " + std::string(library_core) + " kept"};
  if (chosen && chosen->vector_bits >= 256 && chosen->fma)
    return {std::nullopt, "OpenBLAS chose " + std::string(library_core) + " itself; kept"};
  if (rank(best) <= rank(chosen))
    return {std::nullopt, "OpenBLAS chose " + std::string(library_core) + ", as good as the CPU allows; kept"};
  return {std::string(best->name), "OpenBLAS chose " + std::string(library_core) + " on a CPU with " + describe(cpu) +
                                       "; selected " + std::string(best->name)};
}

std::string describe(const CpuFeatures& cpu) {
  std::string out;
  auto add = [&out](bool on, const char* name) {
    if (!on) return;
    if (!out.empty()) out += ' ';
    out += name;
  };
  add(cpu.avx, "avx");
  add(cpu.avx2, "avx2");
  add(cpu.fma, "fma");
  add(cpu.avx512f, "avx512f");
  add(cpu.avx512bw, "avx512bw");
  add(cpu.avx512dq, "avx512dq");
  add(cpu.avx512vl, "avx512vl");
  add(cpu.avx512_bf16, "avx512_bf16");
  add(cpu.amx_tile, "amx_tile");
  add(cpu.amx_bf16, "amx_bf16");
  return out.empty() ? "no AVX" : out;
}

}  // namespace jobctl::train
