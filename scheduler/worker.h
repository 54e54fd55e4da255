// A worker as the scheduler sees it: one machine running jobctl-worker, with its devices. Local
// workers are owned machines (priced by the local GPU inventory); a job leases a whole worker.
//
// Thread safety: plain value.
#pragma once

#include <cstdint>
#include <string>

namespace jobctl::scheduler {

struct Worker {
  std::string id;
  std::string gpu_model = "cpu";   // canonical GPU model, or "cpu" for a CPU-only machine
  int gpu_count = 1;               // devices (1 for a CPU-only machine)
  double gpu_memory_gb = 0;        // per device, GiB as the driver reports it (RAM for "cpu")
  bool busy = false;
  int64_t busy_until_ms = 0;       // when the job it runs is expected to finish (busy only)
};

}  // namespace jobctl::scheduler
