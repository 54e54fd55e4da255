// Matching that honours placement (contract in docs/api.md, "The placement document"): a worker is
// offered only jobs the placement service has placed, and only where the chosen option says:
//   - option "local": a local worker (no "instance" in its registration) that fits the job's
//     resources (job_fits_worker) and whose GPU model is the chosen pool's ("cpu": a CPU-only one);
//   - option "on_demand" / "spot": only a worker whose registration carries an "instance" with the
//     chosen instance type and the same spot flag.
// Jobs not placed yet (queued, placement pending or nothing can run them) are offered to no one.
//
// Thread safety: pick() is pure (JobService calls it under its mutex).
#pragma once

#include "daemon/service/job_matcher.h"
#include "daemon/store/records.h"

namespace jobctl::daemon::service {

class PlacementMatcher final : public JobMatcher {
 public:
  std::optional<int64_t> pick(int64_t worker_id, const WorkerCapabilities& worker,
                              const JobQueue& queue) const override;
};

// Whether a placed job's chosen option lets `worker` run it (the rule above).
bool placement_allows(const QueuedJob& job, const WorkerCapabilities& worker);

// Fills q.placement_* from a placed job's chosen candidate (left empty when it has none).
void set_placement_fields(const store::JobRow& row, QueuedJob& q);

// The GPU model a worker offers, canonical ("cpu" for a CPU-only worker).
std::string worker_gpu_model(const WorkerCapabilities& worker);

}  // namespace jobctl::daemon::service
