#include "cost/cpu_peak.h"

#include "base/strings.h"

namespace jobctl::cost {

namespace {
constexpr double kUnknownClockMhz = 2500;
}

int effective_vector_bits(const CpuFacts& cpu) {
  if (cpu.vector_bits >= 512 && cpu.vendor == "AuthenticAMD") return 256;
  return cpu.vector_bits;
}

double cpu_peak_tflops(const CpuFacts& cpu) {
  const int bits = effective_vector_bits(cpu);
  if (cpu.cores <= 0 || bits <= 0) return 0;
  const double lanes = bits / 32.0;
  const double per_cycle = lanes * (cpu.fma ? 2.0 : 1.0) * 2.0;
  const double mhz = cpu.mhz > 0 ? cpu.mhz : kUnknownClockMhz;
  return cpu.cores * mhz * 1e6 * per_cycle / 1e12;
}

std::string cpu_device_key(std::string_view model, int cores) {
  const std::string_view m = trim(model);
  if (m.empty() || cores <= 0) return "cpu";
  return "cpu/" + std::string(m) + "/" + std::to_string(cores);
}

GpuSpec cpu_machine_spec(std::string_view key, double peak_tflops) {
  GpuSpec own = *find_gpu("cpu");
  own.name = key;
  own.fp32_tflops = peak_tflops;
  own.source = "the machine's cores and SIMD width (cost/cpu_peak.h)";
  return own;
}

}  // namespace jobctl::cost
