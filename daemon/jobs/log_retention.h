// How long jobs' logs are kept: a job's log (daemon/store/job_log_store.h) is deleted once the
// job has been over (succeeded, failed, cancelled) for `retention_ms`, or when the job is gone
// from the store. Checked from the daemon's tick, at most every `interval_ms`.
//
// Ownership: borrows the service, the log store, the clock and the log, which must outlive it.
// Thread safety: tick() and sweep() may be called from any thread; one sweep runs at a time.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/clock.h"
#include "base/expected.h"
#include "base/log.h"
#include "base/pass_log.h"
#include "daemon/jobs/job_service.h"
#include "daemon/store/job_log_store.h"

namespace jobctl::daemon::jobs {

class LogRetention {
 public:
  LogRetention(JobService& service, store::JobLogStore& logs, const Clock& clock, int64_t retention_ms, Log& log);

  // A sweep when the last one is `interval_ms` old; a failed one is logged.
  void tick();
  // One sweep now; returns how many logs were deleted.
  Expected<int> sweep();

  int64_t interval_ms() const { return interval_ms_; }

 private:
  JobService& service_;
  store::JobLogStore& logs_;
  const Clock& clock_;
  const int64_t retention_ms_;
  const int64_t interval_ms_;  // a quarter of the retention, between 0.5 s and 60 s
  Log& log_;
  std::atomic<int64_t> last_sweep_ms_{0};
  PassLog sweep_log_{"log retention sweep"};
};

}  // namespace jobctl::daemon::jobs
