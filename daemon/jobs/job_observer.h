// What the job service tells the rest of the daemon as jobs and workers move: placement learns
// which jobs need placing, how runs progress and end, and when capacity comes back; the metrics
// learn how long leased jobs waited. One interface, every method optional (the default does
// nothing).
//
// Thread safety: the methods run on the store's writer thread (commit hooks) or on the thread of
// the request that caused them. They must be quick, must not block on the store (no reads, no
// blocking writes: store.h) and must not call back into the job service synchronously — record,
// and let another thread do the work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/mutex.h"

namespace jobctl::daemon::jobs {

class JobObserver {
 public:
  virtual ~JobObserver() = default;
  // The job entered the queue unplaced (submitted, requeued, unplaced): placement should place it.
  virtual void job_needs_placement(int64_t job_id) { (void)job_id; }
  // A job was leased after waiting `queue_wait_ms` in the queue (since it was last queued).
  virtual void job_leased(int64_t queue_wait_ms) { (void)queue_wait_ms; }
  // A running job's worker reported progress (JSON object text) in an accepted heartbeat.
  virtual void job_progressed(int64_t job_id, int64_t worker_id, const std::string& progress_json) {
    (void)job_id, (void)worker_id, (void)progress_json;
  }
  // The job succeeded on `worker_id` with `result_json` (JSON object text).
  virtual void job_succeeded(int64_t job_id, int64_t worker_id, const std::string& result_json) {
    (void)job_id, (void)worker_id, (void)result_json;
  }
  // A worker registered, or came back after being marked lost: what placement may use changed.
  virtual void worker_available(int64_t worker_id) { (void)worker_id; }
};

// Tells every added observer, in the order they were added.
//
// Ownership: borrows the observers; each must outlive the service or be removed first. Thread
// safety: every method is safe from any thread; observers are called without the mutex held, so
// one may be added while another is being told.
class JobObservers final : public JobObserver {
 public:
  void add(JobObserver* observer) JOBCTL_EXCLUDES(mu_);
  void remove(JobObserver* observer) JOBCTL_EXCLUDES(mu_);

  void job_needs_placement(int64_t job_id) override;
  void job_leased(int64_t queue_wait_ms) override;
  void job_progressed(int64_t job_id, int64_t worker_id, const std::string& progress_json) override;
  void job_succeeded(int64_t job_id, int64_t worker_id, const std::string& result_json) override;
  void worker_available(int64_t worker_id) override;

 private:
  std::vector<JobObserver*> snapshot() const JOBCTL_EXCLUDES(mu_);

  mutable Mutex mu_;
  std::vector<JobObserver*> observers_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::daemon::jobs
