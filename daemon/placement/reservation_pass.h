// The start plan of the owned machines, made every placement pass (docs/cost-model.md,
// "Reservations and backfill"): the local workers with what their running jobs hold until their
// estimates end (held_gpu_ends), and the jobs placed on them waiting for a worker, in queue order,
// (with fair share on: in fair-share order, scheduler/fair_share.h), each with the workers it may run on (placement_allows) — planned by scheduler::plan_starts and
// published on the start board the matcher reads.
//
// Up to `max_reservations` jobs that cannot start now are reserved (placement.max_reservations).
// When a reservation changes (another worker, or its start moves by more than kStartTolerance),
// the reserved job's placement document says so: a `reservation` object
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
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "daemon/jobs/job_service.h"
#include "daemon/placement/fair_share_usage.h"
#include "daemon/placement/start_board.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::placement {

class ReservationPass {
 public:
  // A reservation's start moving by less than this is not written again (estimates run down with
  // progress reports, and each write is a store change and an event).
  static constexpr int64_t kStartToleranceMs = 5'000;

  ReservationPass(store::Store& store, const Clock& clock, jobs::JobService& jobs, StartBoard& board,
                  int max_reservations = scheduler::kDefaultMaxReservations, FairShareUsage* fair_share = nullptr)
      : store_(store),
        clock_(clock),
        jobs_(jobs),
        board_(board),
        max_reservations_(max_reservations),
        fair_share_(fair_share) {}

  // Plans and publishes; notes a changed reservation on its job. Errors: the store's.
  Status run();

 private:
  // An `overrun` event, once per lease, on each running job past its estimate on a worker some
  // waiting job is planned on (it is not stopped: the plan takes it to end now, and the jobs
  // planned there wait for it).
  Status note_overruns(const std::vector<store::LeaseSummary>& leases,
                       const std::vector<scheduler::Reservation>& holds, int64_t now_ms);
  // `worker_names`: the names of the workers it holds, by id.
  Status note_reservation(const scheduler::Reservation& r, const std::map<int64_t, std::string>& worker_names,
                          int64_t now_ms);

  store::Store& store_;
  const Clock& clock_;
  jobs::JobService& jobs_;
  StartBoard& board_;
  const int max_reservations_;
  // Set: the waiting jobs are planned in fair-share order (scheduler/fair_share.h), not plain
  // queue order.
  FairShareUsage* const fair_share_;
  // With fair share: each waiting job's place in the order and its score's figures, as the last
  // pass computed them (appended to a reservation's reason when it is noted).
  std::map<int64_t, std::string> order_notes_;
  std::map<int64_t, scheduler::Reservation> noted_;  // job -> the last reservation written to it
  std::set<int64_t> overruns_noted_;                  // running jobs whose overrun is noted
};

}  // namespace jobctl::daemon::placement
