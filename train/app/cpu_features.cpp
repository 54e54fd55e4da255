#include "train/app/cpu_features.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace jobctl::train {

#if defined(__x86_64__) || defined(__i386__)

namespace {

uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

bool bit(uint32_t word, int n) { return (word >> n) & 1u; }

}  // namespace

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return f;
  const uint32_t max_leaf = eax;
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  f.amd = std::strcmp(vendor, "AuthenticAMD") == 0;

  __cpuid(1, eax, ebx, ecx, edx);
  const bool osxsave = bit(ecx, 27);
  const uint64_t xcr0 = osxsave ? read_xcr0() : 0;
  const bool ymm_saved = (xcr0 & 0x6) == 0x6;        // SSE and AVX state
  const bool zmm_saved = (xcr0 & 0xE6) == 0xE6;      // plus opmask, ZMM0-15 upper halves, ZMM16-31
  const bool tiles_saved = (xcr0 & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
  f.avx = ymm_saved && bit(ecx, 28);
  f.fma = ymm_saved && bit(ecx, 12);
  if (max_leaf < 7) return f;

  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const uint32_t leaf7_max_sub = eax;
  f.avx2 = ymm_saved && bit(ebx, 5);
  f.avx512f = zmm_saved && bit(ebx, 16);
  f.avx512dq = zmm_saved && bit(ebx, 17);
  f.avx512bw = zmm_saved && bit(ebx, 30);
  f.avx512vl = zmm_saved && bit(ebx, 31);
  f.amx_bf16 = tiles_saved && bit(edx, 22);
  f.amx_tile = tiles_saved && bit(edx, 24);
  if (leaf7_max_sub >= 1) {
    __cpuid_count(7, 1, eax, ebx, ecx, edx);
    f.avx512_bf16 = zmm_saved && bit(eax, 5);
  }
  return f;
}

#else

CpuFeatures detect_cpu_features() { return {}; }

#endif

}  // namespace jobctl::train
