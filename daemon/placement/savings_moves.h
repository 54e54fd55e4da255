// Moves for savings (docs/cost-model.md, "Moves for savings"): a job that runs on a cloud
// instance keeps paying its price after something cheaper appears — an owned GPU that freed up,
// or a cheaper launchable offer (spot back on the market, a cheaper on-demand row) — unless it
// moves. At every re-evaluation, for each job running on a cloud option that has reported
// progress, the remaining work is priced (scheduler::place, run now, not after a wait) on
//   - an idle owned worker that fits it (not for a job whose spec says placement.mode cloud), and
//   - the cheapest cloud option now (on demand only for a job with a deadline: whether it runs on
//     spot is its deadline policy's call, spot_deadlines.h), unless that is where it runs;
// and compared with what its current option still bills:
//
//   saving    = current price x remaining hours here - the option's price x its running hours
//   move cost = (checkpoint write + restart hours) x (current price + the option's price) — the
//               time both sides bill while the job is neither here nor there; the restart
//               includes provisioning for a new instance, not for an owned worker (it is up)
//   move when saving > placement.move_margin x move cost, to the candidate with the larger
//   saving - move cost; at most placement.max_moves_per_hour times per job, and one move to an
//   owned worker per pass (the idle worker it takes is then spoken for).
//
// The move is the move primitive (jobs::JobService::request_move) with target local, on_demand or
// spot, a reason giving the figures and the figures themselves in the event; placed anew on that
// market, the job lands on the option priced here (the same offers and rule). The instance left
// without a job is stopped by the provisioner's idle rule.
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

  // Asks every running cloud job that an idle owned worker or a cheaper offer would run for less
  // (see the header) to move there. Returns how many were asked. Errors: the first failure, naming its job; the
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
