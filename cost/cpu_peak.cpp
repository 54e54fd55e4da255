#include "cost/cpu_peak.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/readable.h"
#include "base/strings.h"
#include "train/spec/blas_cores.h"

namespace jobctl::cost {

namespace {

constexpr double kUnknownClockMhz = 2500;

// The features a worker's report stands for: "vector_bits" is the widest SIMD among its flags
// (512: avx512f, whose CPUs all have BW/DQ/VL but the Xeon Phi; 256: avx or avx2).
train::CpuFeatures features_of(const CpuFacts& cpu) {
  train::CpuFeatures f;
  f.amd = cpu.vendor == "AuthenticAMD";
  f.avx = cpu.vector_bits >= 256;
  f.fma = cpu.fma;
  f.avx2 = cpu.vector_bits >= 256 && cpu.fma;  // AVX2 and FMA arrived together (Haswell, Zen)
  f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = cpu.vector_bits >= 512;
  return f;
}

// The kernels' vector width and FMA before the AMD pipe rule.
std::pair<int, bool> kernels_of(const CpuFacts& cpu) {
  if (cpu.vector_bits < 256) return {cpu.vector_bits, cpu.fma};  // SSE, NEON: as reported
  const auto core = train::best_blas_core(features_of(cpu));
  return core ? std::pair{core->vector_bits, core->fma} : std::pair{128, false};
}

}  // namespace

int effective_vector_bits(const CpuFacts& cpu) {
  const int bits = kernels_of(cpu).first;
  if (bits >= 512 && cpu.vendor == "AuthenticAMD") return 256;
  return bits;
}

bool kernels_use_fma(const CpuFacts& cpu) { return kernels_of(cpu).second; }

void pin_to_blas_core(CpuFacts& cpu, std::string_view core) {
  if (core.empty()) return;
  const auto pinned = train::find_blas_core(core);
  cpu.vector_bits = pinned ? pinned->vector_bits : 128;
  cpu.fma = pinned ? pinned->fma : false;
}

double cpu_peak_tflops(const CpuFacts& cpu) {
  const int bits = effective_vector_bits(cpu);
  if (cpu.cores <= 0 || bits <= 0) return 0;
  const double lanes = bits / 32.0;
  const double per_cycle = lanes * (kernels_use_fma(cpu) ? 2.0 : 1.0) * 2.0;
  const double mhz = cpu.mhz > 0 ? cpu.mhz : kUnknownClockMhz;
  return cpu.cores * mhz * 1e6 * per_cycle / 1e12;
}

double cpu_machine_peak_tflops(const CpuFacts& cpu) {
  const double formula = cpu_peak_tflops(cpu);
  const double measured = cpu.measured_tflops > 0 && std::isfinite(cpu.measured_tflops)
                              ? cpu.measured_tflops * kMeasuredPeakHeadroom
                              : 0;
  return std::max(formula, measured);
}

std::string cpu_device_key(std::string_view model, int cores) {
  const std::string_view m = trim(model);
  if (m.empty() || cores <= 0) return "cpu";
  return "cpu/" + std::string(m) + "/" + std::to_string(cores);
}

std::string device_label(std::string_view device, int count) {
  if (device == "cpu") return "CPU";
  if (device.starts_with("cpu/")) {
    const std::string_view cores = device.substr(device.rfind('/') + 1);
    if (cores.empty() || cores.size() > 6 || cores.find_first_not_of("0123456789") != std::string_view::npos)
      return "CPU";
    return "CPU, " + readable::count(std::stoll(std::string(cores)), "core");
  }
  return std::string(device.empty() ? "?" : device) + " x" + std::to_string(count);
}

GpuSpec cpu_machine_spec(std::string_view key, double peak_tflops) {
  GpuSpec own = *find_gpu("cpu");
  own.name = key;
  own.fp32_tflops = peak_tflops;
  own.source = "the machine's cores and SIMD width (cost/cpu_peak.h)";
  return own;
}

}  // namespace jobctl::cost
