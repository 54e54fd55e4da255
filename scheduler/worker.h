// A worker as the scheduler sees it: one machine running jobctl-worker, with its devices. Local
// workers are owned machines (priced by the local GPU inventory). A job takes the GPUs it asks for
// (resources.gpus), so a 4-GPU worker runs up to four 1-GPU jobs at once; a CPU-only machine is
// one "cpu" device.
//
// Thread safety: plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/spec/allowed_mounts.h"

namespace jobctl::scheduler {

// What a machine offers a job in an image (train/spec/allowed_mounts.h).
using ContainerSupport = train::ContainerSupport;

struct Worker {
  std::string id;
  std::string gpu_model = "cpu";   // canonical GPU model, or "cpu" for a CPU-only machine
  int gpu_count = 1;               // devices (1 for a CPU-only machine)
  double gpu_memory_gb = 0;        // per device, GiB as the driver reports it (RAM for "cpu")
  bool runs_commands = false;      // runs command jobs (jobctl-worker --allow-commands)
  ContainerSupport containers;     // runs jobs in an image, with which mounts
  // GPUs held by running jobs: one entry per GPU, when the job holding it is expected to end.
  // Fewer entries than gpu_count: the rest are free.
  std::vector<int64_t> held_until;
  // The whole machine taken (as if every GPU were held until busy_until_ms): what a caller that
  // does not count GPUs sets. LocalCapacity keeps it true exactly when no GPU is free.
  bool busy = false;
  int64_t busy_until_ms = 0;
};

}  // namespace jobctl::scheduler
