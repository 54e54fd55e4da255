// CRC32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78), as used by iSCSI, ext4 and
// LevelDB. Checkpoints and uploaded blobs carry one per section so that a torn or corrupt file is
// detected before any of it is trusted.
//
// On x86-64 with SSE4.2 the hardware instruction is used (chosen once at run time); elsewhere a
// portable slicing-by-8 table. Both give identical results (tested against the RFC 3720 vectors).
//
// Thread safety: pure functions; the tables are built once, thread-safely, on first use.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define JOBCTL_CRC32C_X86 1
#endif

namespace jobctl::crc32c {

namespace detail {

inline const std::array<std::array<uint32_t, 256>, 8>& tables() {
  static const auto t = [] {
    std::array<std::array<uint32_t, 256>, 8> tab{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s) tab[s][i] = (tab[s - 1][i] >> 8) ^ tab[0][tab[s - 1][i] & 0xFF];
    return tab;
  }();
  return t;
}

// Raw update (no pre/post inversion) with slicing-by-8.
inline uint32_t update_portable(uint32_t crc, const uint8_t* p, size_t n) {
  const auto& t = tables();
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;  // little-endian hosts only; jobctl targets x86-64 and aarch64 LE
    crc = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
          t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xFF];
  return crc;
}

#ifdef JOBCTL_CRC32C_X86
__attribute__((target("sse4.2"))) inline uint32_t update_sse42(uint32_t crc, const uint8_t* p,
                                                                size_t n) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}
inline bool have_sse42() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

}  // namespace detail

// Extends a CRC32C over more bytes: extend(extend(0, a), b) == value(a ++ b).
inline uint32_t extend(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
#ifdef JOBCTL_CRC32C_X86
  if (detail::have_sse42()) return ~detail::update_sse42(c, p, n);
#endif
  return ~detail::update_portable(c, p, n);
}

inline uint32_t value(const void* data, size_t n) { return extend(0, data, n); }

// The portable path alone, so tests can hold the hardware path to it.
inline uint32_t value_portable(const void* data, size_t n) {
  return ~detail::update_portable(~0u, static_cast<const uint8_t*>(data), n);
}

}  // namespace jobctl::crc32c
