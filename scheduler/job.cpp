#include "scheduler/job.h"

#include "cost/gpu_specs.h"

namespace jobctl::scheduler {

Job job_from_spec(std::string id, const train::JobSpec& spec, const train::ModelStats& stats,
                  int64_t submitted_ms) {
  Job j;
  j.id = std::move(id);
  j.priority = spec.priority;
  j.submitted_ms = submitted_ms;
  // The request's canonical text ("A100", "A100-80GB", "H100-PCIe", "any", "cpu"); a name no
  // request parses keeps its spelling and matches nothing (submit refuses such specs).
  auto request = cost::parse_gpu_request(spec.resources.gpu);
  j.gpu = request ? request->name() : spec.resources.gpu;
  j.workload = cost::workload_from_spec(spec, stats);
  j.mode = spec.placement.mode;
  j.spot = spec.placement.spot;
  j.max_usd_per_hour = spec.placement.max_usd_per_hour;
  j.deadline_hours = spec.placement.deadline_hours;
  j.command = spec.is_command();
  j.image = !spec.image.empty();
  j.mounts = spec.mounts;
  j.nodes = spec.resources.nodes;
  return j;
}

}  // namespace jobctl::scheduler
