#include "daemon/jobs/job_matcher.h"

namespace jobctl::daemon::jobs {

std::optional<int64_t> FifoMatcher::pick(int64_t /*worker_id*/, const WorkerCapabilities& worker,
                                         const JobQueue& queue) const {
  for (const QueuedJob& job : queue)
    if (worker_takes_kind(job, worker) && job_fits_worker(job.resource_gpu, job.resource_gpus, worker)) return job.id;
  return std::nullopt;
}

}  // namespace jobctl::daemon::jobs
