// Moves for priority (docs/cost-model.md, "Moves for priority"): a job waiting for a busy pool of
// owned GPUs that will miss its deadline there takes a GPU from the lowest-priority job running
// in that pool — which is moved (checkpointed and placed anew), not killed.
//
// At every re-evaluation, for each job placed on a local pool and not yet leased whose placement
// says it misses its deadline, the jobs running on that pool (the same chosen GPU model) with a
// lower priority are candidates; the lowest priority goes first, and among equals the one that
// started last (the least work to redo after its checkpoint). The move is the move primitive
// (jobs::JobService::request_move, target anywhere); the freed worker is offered the waiting jobs
// in priority order, so the higher-priority job takes it. Each waiting job takes at most one GPU
// this way until it is leased.
//
// Ownership and thread safety: borrows the store and the job service (both outlive it). check()
// runs on the placement thread, one call at a time.
#pragma once

#include <cstdint>
#include <set>

#include "base/expected.h"
#include "daemon/jobs/job_service.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::placement {

class PriorityMoves {
 public:
  PriorityMoves(store::Store& store, jobs::JobService& jobs) : store_(store), jobs_(jobs) {}

  // Asks lower-priority jobs to make room (see the header). Returns how many were asked. Errors:
  // the first failure, naming its job; the others are checked all the same.
  Expected<int> check();

 private:
  store::Store& store_;
  jobs::JobService& jobs_;
  std::set<int64_t> made_room_for_;  // waiting jobs a move was asked for, until they are leased
};

}  // namespace jobctl::daemon::placement
