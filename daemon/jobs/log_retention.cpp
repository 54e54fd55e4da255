#include "daemon/jobs/log_retention.h"

#include <algorithm>

#include "scheduler/job_state.h"

namespace jobctl::daemon::jobs {

LogRetention::LogRetention(JobService& service, store::JobLogStore& logs, const Clock& clock, int64_t retention_ms,
                           Log& log)
    : service_(service),
      logs_(logs),
      clock_(clock),
      retention_ms_(retention_ms),
      interval_ms_(std::clamp<int64_t>(retention_ms / 4, 500, 60000)),
      log_(log) {}

Expected<int> LogRetention::sweep() {
  const int64_t now = clock_.now_ms();
  Status failed;
  auto removed = logs_.sweep([&](int64_t job_id) {
    auto job = service_.get_job(job_id);
    if (!job) {
      if (job.error().code == ErrorCode::not_found) return true;
      failed = job.error();
      return false;
    }
    return scheduler::is_terminal(job->job.state) && job->job.updated_ms + retention_ms_ <= now;
  });
  if (!removed) return removed.error();
  if (!failed) return failed.error();
  return removed;
}

void LogRetention::tick() {
  const int64_t now = clock_.now_ms();
  int64_t last = last_sweep_ms_.load();
  if (now - last < interval_ms_) return;
  if (!last_sweep_ms_.compare_exchange_strong(last, now)) return;  // another tick is sweeping
  auto swept = sweep();
  sweep_log_.report(swept ? Status{} : Status{swept.error()}, log_, now);
}

}  // namespace jobctl::daemon::jobs
