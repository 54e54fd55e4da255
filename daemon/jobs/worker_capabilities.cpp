#include "daemon/jobs/worker_capabilities.h"

#include <algorithm>

#include "cost/gpu_specs.h"

namespace jobctl::daemon::jobs {

bool job_fits_worker(std::string_view resource_gpu, int resource_gpus,
                     const WorkerCapabilities& worker) {
  auto request = cost::parse_gpu_request(resource_gpu);
  if (!request) return false;
  if (request->kind == cost::GpuRequest::Kind::any) return true;
  if (request->kind == cost::GpuRequest::Kind::cpu) return worker.cpu_only();
  int matching = 0;
  for (const auto& g : worker.gpus)
    if (const cost::GpuSpec* spec = g.identity(); spec && request->matches(*spec)) ++matching;
  return matching > 0 && matching >= std::max(resource_gpus, 1);
}

}  // namespace jobctl::daemon::jobs
