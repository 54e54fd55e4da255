#include "daemon/placement/placement_matcher.h"

#include <nlohmann/json.hpp>

#include "cost/cpu_peak.h"
#include "cost/gpu_specs.h"
#include "daemon/placement/start_board.h"

namespace jobctl::daemon::placement {

std::string worker_gpu_model(const jobs::WorkerCapabilities& worker) {
  if (worker.gpus.empty()) return "cpu";
  const auto& g = worker.gpus.front();
  const double gib = static_cast<double>(g.memory_mb) / 1024.0;
  // Driver names carry suffixes the spec table may not list ("Tesla V100-SXM2-16GB"): drop
  // trailing "-..." parts until a known model remains.
  std::string name = g.model;
  for (;;) {
    if (cost::find_gpu(name)) return cost::canonical_gpu_name(name, gib);
    const size_t dash = name.find_last_of('-');
    if (dash == std::string::npos || dash == 0) break;
    name.resize(dash);
  }
  return cost::canonical_gpu_name(g.model, gib);
}

std::string worker_device(const jobs::WorkerCapabilities& worker) {
  if (worker.gpus.empty() && worker_cpu_peak_tflops(worker) > 0)
    return cost::cpu_device_key(worker.cpu->model, worker.cpu_cores);
  return worker_gpu_model(worker);
}

double worker_cpu_peak_tflops(const jobs::WorkerCapabilities& worker) {
  if (!worker.gpus.empty() || !worker.cpu || worker.cpu_cores <= 0) return 0;
  if (cost::cpu_device_key(worker.cpu->model, worker.cpu_cores) == "cpu") return 0;  // no model: no key
  return cost::cpu_machine_peak_tflops(*worker.cpu);
}

bool placement_allows(const jobs::QueuedJob& job, const jobs::WorkerCapabilities& worker) {
  if (!job.placement_option) return false;  // not placed yet
  if (!jobs::worker_takes_kind(job, worker)) return false;
  if (job.placement_option == store::OptionKind::local) {
    if (worker.instance) return false;
    if (!jobs::job_fits_worker(job.resource_gpu == "any" && job.placement_gpu == "cpu" ? "any" : job.resource_gpu,
                         job.resource_gpus, worker))
      return false;
    // A CPU machine's key names that machine alone; a GPU model in any spelling names its model.
    return job.placement_gpu.empty() || job.placement_gpu == worker_device(worker) ||
           (!job.placement_gpu.starts_with("cpu/") &&
            cost::canonical_gpu_name(job.placement_gpu) == worker_gpu_model(worker));
  }
  if (!worker.instance) return false;
  // A Slurm batch job's worker runs the one job it was submitted for, and nothing else runs there.
  const bool slurm_worker = worker.instance->provider == "slurm";
  if (job.placement_option == store::OptionKind::slurm) return slurm_worker && worker.instance->job_id == job.id;
  if (slurm_worker) return false;
  // A cloud instance launched for one command job runs that job alone.
  if (worker.instance->job_id != 0 && worker.instance->job_id != job.id) return false;
  const bool spot = job.placement_option == store::OptionKind::spot;
  return worker.instance->spot == spot && worker.instance->instance_type == job.placement_instance_type;
}

bool PlacementMatcher::offers(const jobs::QueuedJob& job, int64_t worker_id,
                              const jobs::WorkerCapabilities& worker) const {
  if (!placement_allows(job, worker)) return false;
  if (board_ && job.placement_option == store::OptionKind::local)
    return board_->admit(job.id, job.resource_gpus, job.placement_estimated_hours, worker_id,
                         clock_ ? clock_->now_ms() : 0);
  return true;
}

}  // namespace jobctl::daemon::placement
