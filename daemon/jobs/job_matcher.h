// Which queued job a worker asking for work is offered: the one seam where placement plugs in.
// The daemon ships FifoMatcher (the first job in queue order that fits the worker); cost-based
// placement from scheduler/ implements the same interface and the lease broker does not change.
//
// Thread safety: pick() is called with the lease broker's mutex held; implementations must not call
// back into the service, and should be quick.
#pragma once

#include <cstdint>
#include <optional>

#include "daemon/jobs/job_queue.h"
#include "daemon/jobs/worker_capabilities.h"

namespace jobctl::daemon::jobs {

class JobMatcher {
 public:
  virtual ~JobMatcher() = default;
  // The id of the job to offer `worker`, or nullopt to offer nothing now.
  virtual std::optional<int64_t> pick(int64_t worker_id, const WorkerCapabilities& worker,
                                       const JobQueue& queue) const = 0;
};

// Priority, then age: the first job in queue order that fits (job_fits_worker).
class FifoMatcher final : public JobMatcher {
 public:
  std::optional<int64_t> pick(int64_t worker_id, const WorkerCapabilities& worker,
                              const JobQueue& queue) const override;
};

}  // namespace jobctl::daemon::jobs
