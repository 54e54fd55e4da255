// Asks the kernel to back a large buffer with transparent huge pages (Linux madvise), for the
// 2 MiB-aligned part of it. On a VM every 4 KiB page fault costs microseconds, and a dataset is
// hundreds of thousands of pages; with huge pages it is a few hundred. Use it on reserved but not
// yet touched memory (reserve, advise, then resize). A hint only: errors are ignored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <sys/mman.h>

namespace jobctl::train {

inline void advise_huge_pages(void* p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

// Resizes an empty vector to n elements, huge-page-advised before the first touch.
template <class T>
void resize_with_huge_pages(std::vector<T>& v, size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), n * sizeof(T));
  v.resize(n);
}

}  // namespace jobctl::train
