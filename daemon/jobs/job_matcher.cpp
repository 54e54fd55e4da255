#include "daemon/jobs/job_matcher.h"

namespace jobctl::daemon::jobs {

std::optional<int64_t> JobMatcher::pick(int64_t worker_id, const WorkerCapabilities& worker, const JobQueue& queue,
                                        const std::set<int64_t>& passed) const {
  for (const QueuedJob& job : queue)
    if (!passed.count(job.id) && offers(job, worker_id, worker)) return job.id;
  return std::nullopt;
}

bool FifoMatcher::offers(const QueuedJob& job, int64_t /*worker_id*/, const WorkerCapabilities& worker) const {
  return worker_takes_kind(job, worker) && job_fits_worker(job.resource_gpu, job.resource_gpus, worker);
}

}  // namespace jobctl::daemon::jobs
