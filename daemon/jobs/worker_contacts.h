// When jobctld last heard from each worker (a heartbeat, a lease request, a long-poll, its
// registration), on the steady clock: what decides whether a worker is active (docs/recovery.md,
// "A worker goes silent").
//
// The stored last_seen_ms is for people, and heartbeats advance it only every 10 s; judging a
// worker by it marked workers lost that were heartbeating. Here every contact counts, at once,
// and a wall-clock step changes nothing. A restarted jobctld has heard from no one yet: every
// worker counts as heard at its start (`started_steady_ms`), so each gets a whole lease timeout to
// reach it, however long jobctld was down — the same re-basing the leases get at start.
//
// Thread safety: every method is safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "base/mutex.h"

namespace jobctl::daemon::jobs {

struct WorkerContact {
  int64_t steady_ms = 0;  // when, on the steady clock
  int64_t wall_ms = 0;    // when, on the wall clock (what "last seen" shows)
};

class WorkerContacts {
 public:
  explicit WorkerContacts(int64_t started_steady_ms) : started_steady_ms_(started_steady_ms) {}

  void heard(int64_t worker_id, int64_t steady_ms, int64_t wall_ms) JOBCTL_EXCLUDES(mu_);
  // The newest contact with the worker since start, if any.
  std::optional<WorkerContact> last(int64_t worker_id) const JOBCTL_EXCLUDES(mu_);
  // How long the worker has been silent at `steady_now_ms`: since its newest contact, or since
  // jobctld started when it has not been heard from since.
  int64_t silence_ms(int64_t worker_id, int64_t steady_now_ms) const JOBCTL_EXCLUDES(mu_);
  void forget(int64_t worker_id) JOBCTL_EXCLUDES(mu_);

 private:
  const int64_t started_steady_ms_;
  mutable Mutex mu_;
  std::unordered_map<int64_t, WorkerContact> last_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::daemon::jobs
