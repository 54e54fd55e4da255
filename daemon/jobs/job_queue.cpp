#include "daemon/jobs/job_queue.h"

#include "train/spec/allowed_mounts.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::jobs {

void set_placement_fields(const store::JobRow& row, QueuedJob& q) {
  if (!row.chosen) return;
  q.placement_option = row.chosen->option;
  q.placement_gpu = row.chosen->gpu;
  q.placement_instance_type = row.chosen->instance_type;
  q.placement_estimated_hours = row.chosen->estimated_hours;
  q.placement_zone = row.chosen->zone;
}

void set_program_fields(const train::JobSpec& spec, QueuedJob& q) {
  q.command = spec.is_command();
  q.image = !spec.image.empty();
  q.mounts = spec.mounts;
}

bool worker_takes_kind(const QueuedJob& job, const WorkerCapabilities& worker) {
  if (job.command && !worker.commands) return false;
  if (job.image && worker.containers.empty()) return false;
  for (const train::MountSpec& m : job.mounts)
    if (!train::mount_allowed(m.source, m.writable, worker.mounts)) return false;
  // A gang's nodes are told where the others are: a worker that said no address cannot be one.
  return job.nodes <= 1 || !worker.address.empty();
}

}  // namespace jobctl::daemon::jobs
