// Which worker a job fits: the matching rule over a worker's capabilities (the type itself is
// the store's: daemon/store/worker_capabilities.h, decoded once when a worker row is read).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "daemon/store/worker_capabilities.h"

namespace jobctl::daemon::jobs {

using store::capabilities_from_json;
using store::GpuDevice;
using store::to_json;
using store::WorkerCapabilities;
using store::WorkerInstance;

// The matching rule for a job's `resources` (docs/api.md, "Which worker gets a job"):
//   gpu "any"   -> every worker, CPU-only ones included
//   gpu "cpu"   -> CPU-only workers
//   gpu "<model>" -> workers with at least `gpus` GPUs that are variants the request names
//                    (cost::parse_gpu_request against cost::identify_gpu of each device:
//                    "A100" takes an "NVIDIA A100-SXM4-80GB", "A100-80GB" does not take an
//                    "NVIDIA A100-PCIE-40GB", "4090" takes an "NVIDIA GeForce RTX 4090")
bool job_fits_worker(std::string_view resource_gpu, int resource_gpus,
                     const WorkerCapabilities& worker);

// What an operator should know about a worker's registration, one sentence each: a GPU model
// jobctl's table does not know (it is used for `gpu: any` jobs at conservative figures,
// cost::unknown_gpu_spec, not at its own). Empty: nothing.
std::vector<std::string> worker_warnings(const WorkerCapabilities& worker);

}  // namespace jobctl::daemon::jobs
