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

// What a machine offers a job in an image: a container runtime (jobctl-worker
// --container-runtime), and the host folders such jobs may mount (--allow-mount).
struct ContainerSupport {
  bool runs_images = false;
  std::vector<train::AllowedMount> mounts;
  bool operator==(const ContainerSupport&) const = default;
  // Whether a job (in an image when `image`, with `job_mounts`) can run here: a job in no image
  // always can.
  bool takes(bool image, const std::vector<train::MountSpec>& job_mounts) const {
    if (!image) return true;
    if (!runs_images) return false;
    for (const auto& m : job_mounts)
      if (!train::mount_allowed(m.source, m.writable, mounts)) return false;
    return true;
  }
  // The jobctl-worker flags that give a worker this support (for the workers jobctld starts).
  std::vector<std::string> worker_flags() const {
    if (!runs_images) return {};
    std::vector<std::string> flags = {"--container-runtime", "podman"};
    for (const auto& m : mounts) {
      flags.push_back("--allow-mount");
      flags.push_back(m.prefix + (m.writable ? ":rw" : ""));
    }
    return flags;
  }
};

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
