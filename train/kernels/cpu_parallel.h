// Runs the host kernels' loops on the BLAS thread count (CpuBackend's `threads`): a small pool of
// worker threads that sleep between calls (they never spin, so they do not take cores from the
// BLAS threads, which run at other times).
//
// parallel_for(n, grain, body) calls body(begin, end) for the chunks [0, grain), [grain, 2*grain),
// ... of [0, n) on any of the threads, each chunk exactly once, and returns when all are done.
// The chunks depend on n and grain only, never on the thread count, so a kernel whose chunks write
// disjoint outputs (and reduce within a chunk in a fixed order) gives the same bits with any
// number of threads.
//
// Thread safety: any thread may call; concurrent callers are served one at a time, and a
// parallel_for inside a chunk runs its chunks on the calling thread.
#pragma once

#include <cstddef>
#include <functional>

namespace jobctl::train::cpu {

void parallel_for(size_t n, size_t grain, const std::function<void(size_t begin, size_t end)>& body);

// Threads parallel_for uses (1 = the caller only). <= 0: all cores.
void set_parallel_threads(int threads);
int parallel_threads();

}  // namespace jobctl::train::cpu
