// The start plan of the owned machines, made every placement pass (docs/cost-model.md,
// "Reservations and backfill"): the local workers with what their running jobs hold until their
// estimates end (held_gpu_ends), and the jobs placed on them waiting for a worker, in queue order,
// each with the workers it may run on (placement_allows) — planned by scheduler::plan_starts and
// published on the start board the matcher reads.
//
// When the reservation changes (another job or worker, or its start moves by more than
// kStartTolerance), the reserved job's placement document says so: a `reservation` object
// (worker, GPUs, start), the reason naming the worker and the start time, its chosen option's
// queue wait and whether it meets its deadline from that start — what priority moves and the
// deadline checks read — and a `reserved` event with the same figures.
//
// Ownership: borrows the store, the clock, the job service and the board (all outlive it).
// Thread safety: run() is called by one thread at a time (the placement tick).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/expected.h"
#include "daemon/jobs/job_service.h"
#include "daemon/placement/start_board.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::placement {

class ReservationPass {
 public:
  // A reservation's start moving by less than this is not written again (estimates run down with
  // progress reports, and each write is a store change and an event).
  static constexpr int64_t kStartToleranceMs = 5'000;

  ReservationPass(store::Store& store, const Clock& clock, jobs::JobService& jobs, StartBoard& board)
      : store_(store), clock_(clock), jobs_(jobs), board_(board) {}

  // Plans and publishes; notes a changed reservation on its job. Errors: the store's.
  Status run();

 private:
  // `worker_names`: the names of the workers it holds, by id.
  Status note_reservation(const scheduler::Reservation& r, const std::map<int64_t, std::string>& worker_names,
                          int64_t now_ms);

  store::Store& store_;
  const Clock& clock_;
  jobs::JobService& jobs_;
  StartBoard& board_;
  std::optional<scheduler::Reservation> noted_;  // the last reservation written to its job
};

}  // namespace jobctl::daemon::placement
