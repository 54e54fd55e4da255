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

std::vector<std::string> worker_warnings(const WorkerCapabilities& worker) {
  std::vector<std::string> out;
  std::vector<std::string> named;
  for (const auto& g : worker.gpus) {
    if (g.identity() || std::find(named.begin(), named.end(), g.model) != named.end()) continue;
    named.push_back(g.model);
    out.push_back("GPU '" + g.model + "' (" + std::to_string(g.memory_mb) +
                  " MiB) is not in jobctl's GPU table: it takes `gpu: any` jobs and jobs that name it, estimated "
                  "at the table's least favourable figures (docs/cost-model.md, \"Unknown GPUs\")");
  }
  return out;
}

}  // namespace jobctl::daemon::jobs
