#include "daemon/jobs/housekeeping.h"

namespace jobctl::daemon::jobs {

Housekeeping::Housekeeping(store::Store& store, const Clock& clock, const ServiceOptions& options, Log& log,
                           LeaseBroker& broker, LeaseReports& reports, JobCommands& commands, JobMoves& moves)
    : store_(store),
      clock_(clock),
      options_(options),
      log_(log),
      broker_(broker),
      reports_(reports),
      commands_(commands),
      moves_(moves) {}

void Housekeeping::tick() {
  const int64_t now = clock_.now_ms();
  const int64_t steady = clock_.steady_ms();  // when the passes are due: a wall-clock step must not stall them
  broker_.expire_waits(steady);
  if (broker_.shutting_down()) return;
  bool due = false;
  {
    MutexLock lock(mu_);
    if (steady >= next_pass_ms_) {
      next_pass_ms_ = steady + 1000;
      due = true;
    }
  }
  if (!due) return;
  auto expired = expire_leases();
  expiry_log_.report(expired ? Status{} : Status{expired.error()}, log_, now);
  if (expired) reports_.live().prune(steady);  // after expiry, which expires the silent ones it drops
  auto silent = mark_silent_workers_lost();
  silent_workers_log_.report(silent ? Status{} : Status{silent.error()}, log_, now);
  auto unclaimed = unplace_unclaimed();
  unclaimed_log_.report(unclaimed ? Status{} : Status{unclaimed.error()}, log_, now);
}

}  // namespace jobctl::daemon::jobs
