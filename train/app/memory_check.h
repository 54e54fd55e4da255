// Whether this machine has the memory a run needs, checked before anything large is allocated,
// so that a job too big for the machine ends with a clear error (exit code 6) instead of
// std::bad_alloc or the kernel's out-of-memory killer ("killed by signal 9").
//
// Host memory a run needs (the CPU path holds everything on the host; the CUDA path holds the
// data and checkpoint snapshots there):
//   data       (train + test samples) x (features x 4 + 4) bytes    (float features, int32 labels)
//   model      weights + gradients + optimizer state + activations x batch   (ModelStats), CPU only
//   snapshot   weights + optimizer state again: a checkpoint copies the state before writing it
//   fixed      256 MiB (the program, BLAS buffers, the evaluation batch) + 10% of the above
// What the machine has: /proc/meminfo MemAvailable, and where the process runs in a cgroup with a
// memory limit, that limit minus the cgroup's current use (the smaller of the two).
//
// Thread safety: pure functions, except available_host_memory() which reads /proc and /sys.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "train/spec/job_spec.h"
#include "train/spec/model_stats.h"

namespace jobctl::train {

struct HostMemoryNeed {
  int64_t data_bytes = 0;
  int64_t model_bytes = 0;     // 0 when the model lives on a GPU
  int64_t snapshot_bytes = 0;
  int64_t fixed_bytes = 0;
  int64_t total() const { return data_bytes + model_bytes + snapshot_bytes + fixed_bytes; }
};

HostMemoryNeed host_memory_need(const JobSpec& spec, const ModelStats& stats, bool model_on_host);

// MemAvailable from a /proc/meminfo text, bytes; nullopt when absent.
std::optional<int64_t> mem_available_bytes(std::string_view meminfo);
// Bytes this process may still allocate: min(MemAvailable, cgroup limit - cgroup usage); nullopt
// when neither can be read.
std::optional<int64_t> available_host_memory();

// An error (invalid_argument, field "memory", the parts and the figures in its message) when the need is
// larger than what is available; ok when it fits or nothing is known about the machine.
[[nodiscard]] Status check_host_memory(const HostMemoryNeed& need, std::optional<int64_t> available);

}  // namespace jobctl::train
