// Moves for savings (docs/cost-model.md, "Moves for savings"): a job that runs on a cloud
// instance because the owned GPUs were busy keeps paying cloud prices after they free up, unless
// it moves. At every re-evaluation, for each job running on a cloud option, the remaining work is
// priced on an idle owned worker that fits it (scheduler::place with the job held to local
// options, run now, not after a wait) and compared with what its current option still bills:
//
//   saving    = current price x remaining hours there - the owned worker's cost of the remaining work
//   move cost = (checkpoint write + restart hours, no provisioning: the worker is up)
//               x (current price + owned price) — the time both sides bill while the job is
//               neither here nor there
// Jobs whose spec sends them to the cloud (placement.mode cloud) are never moved for savings.
//   move when saving > placement.move_margin x move cost, at most placement.max_moves_per_hour
//   times per job.
//
// The move is the move primitive (jobs::JobService::request_move) with target local, a reason
// giving the figures and the figures themselves in the event; the instance left without a job is stopped by the provisioner's idle rule.
//
// Ownership and thread safety: borrows the store, the clock, the job service and the passes (all
// outlive it). check() runs on the placement thread, one call at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <map>

#include "base/clock.h"
#include "base/expected.h"
#include "daemon/jobs/job_service.h"
#include "daemon/placement/placement_config.h"
#include "daemon/placement/placement_passes.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::placement {

class SavingsMoves {
 public:
  SavingsMoves(store::Store& store, const Clock& clock, jobs::JobService& jobs, const PlacementSettings& settings,
               PlacementPasses& passes)
      : store_(store), clock_(clock), jobs_(jobs), settings_(settings), passes_(passes) {}

  // Asks every running cloud job that an idle owned worker would run for less (see the header)
  // to move there. Returns how many were asked. Errors: the first failure, naming its job; the
  // other jobs are checked all the same.
  Expected<int> check();

 private:
  bool under_rate_limit(int64_t job_id, int64_t now_ms);

  store::Store& store_;
  const Clock& clock_;
  jobs::JobService& jobs_;
  const PlacementSettings& settings_;
  PlacementPasses& passes_;
  std::map<int64_t, std::deque<int64_t>> moves_ms_;  // by job: when it was asked to move, the last hour
};

}  // namespace jobctl::daemon::placement
