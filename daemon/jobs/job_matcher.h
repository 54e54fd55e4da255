// Which queued job a worker asking for work is offered: the one seam where placement plugs in.
// The daemon ships FifoMatcher (the first job in queue order that fits the worker); cost-based
// placement from scheduler/ implements the same interface and the lease broker does not change.
//
// Thread safety: pick() is called with the lease broker's mutex held; implementations must not call
// back into the service, and should be quick.
#pragma once

#include <cstdint>
#include <optional>
#include <set>

#include "daemon/jobs/job_queue.h"
#include "daemon/jobs/worker_capabilities.h"

namespace jobctl::daemon::jobs {

class JobMatcher {
 public:
  virtual ~JobMatcher() = default;
  // Whether `worker` may be offered `job` now. An implementation may count an offer it allows
  // (a start board counts a backfill's GPUs).
  virtual bool offers(const QueuedJob& job, int64_t worker_id, const WorkerCapabilities& worker) const = 0;
  // The first job in queue order that offers() allows, passing over the ids in `passed` (gangs
  // that let their held workers go: lease_broker.h); nullopt: offer nothing now.
  std::optional<int64_t> pick(int64_t worker_id, const WorkerCapabilities& worker, const JobQueue& queue,
                              const std::set<int64_t>& passed = {}) const;
};

// Priority, then age: the first job in queue order that fits (job_fits_worker).
class FifoMatcher final : public JobMatcher {
 public:
  bool offers(const QueuedJob& job, int64_t worker_id, const WorkerCapabilities& worker) const override;
};

}  // namespace jobctl::daemon::jobs
