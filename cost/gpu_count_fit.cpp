#include "cost/gpu_count_fit.h"

#include <algorithm>

namespace jobctl::cost {

int smallest_fitting_gpus(const Workload& w, int available, double memory_bytes_per_gpu) {
  const int step = w.transformer ? std::max(w.transformer->tensor_parallel, 1) : 1;
  for (int n = step; n <= available; n += step)
    if (static_cast<double>(vram_bytes_for(w, n)) <= memory_bytes_per_gpu) return n;
  return 0;
}

}  // namespace jobctl::cost
