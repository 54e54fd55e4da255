#include "daemon/jobs/job_observer.h"

#include <algorithm>

namespace jobctl::daemon::jobs {

void JobObservers::add(JobObserver* observer) {
  MutexLock lock(mu_);
  observers_.push_back(observer);
}

void JobObservers::remove(JobObserver* observer) {
  MutexLock lock(mu_);
  observers_.erase(std::remove(observers_.begin(), observers_.end(), observer), observers_.end());
}

std::vector<JobObserver*> JobObservers::snapshot() const {
  MutexLock lock(mu_);
  return observers_;
}

void JobObservers::job_needs_placement(int64_t job_id) {
  for (JobObserver* o : snapshot()) o->job_needs_placement(job_id);
}

void JobObservers::job_leased(int64_t queue_wait_ms) {
  for (JobObserver* o : snapshot()) o->job_leased(queue_wait_ms);
}

void JobObservers::job_progressed(int64_t job_id, int64_t worker_id, const std::string& progress_json) {
  for (JobObserver* o : snapshot()) o->job_progressed(job_id, worker_id, progress_json);
}

void JobObservers::job_succeeded(int64_t job_id, int64_t worker_id, const std::string& result_json) {
  for (JobObserver* o : snapshot()) o->job_succeeded(job_id, worker_id, result_json);
}

void JobObservers::worker_available(int64_t worker_id) {
  for (JobObserver* o : snapshot()) o->worker_available(worker_id);
}

}  // namespace jobctl::daemon::jobs
