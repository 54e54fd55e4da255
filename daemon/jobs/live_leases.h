// The newest heartbeat of every running lease, kept in memory so that most heartbeats need no
// store change (docs/recovery.md, "Heartbeats and the store").
//
// A heartbeat renews its lease and carries the job's progress. Writing both to the store on every
// heartbeat made heartbeats the daemon's largest cost with thousands of workers (a transaction,
// WAL frames and a hand-off to the writer thread each), while nothing reads them that often. So
// the store is written when a lease's stored expiry has come within `store_every_ms` of the newest
// one (by default half the lease timeout), and here in between. What reads a lease's liveness or
// progress asks here first:
//   - lease expiry (Housekeeping::expire_leases): a lease whose stored expiry has passed but which
//     was heard from within the timeout here is renewed in the store, not expired — expiry stays
//     "lease_timeout_s after the last heartbeat", exact in a running daemon;
//   - the job views (get_job, list_jobs) show the newest progress and expiry;
//   - a lease that ends (complete, fail, preempt, cancel, expiry) stores the newest progress;
//   - a worker that heartbeats is not silent (mark_silent_workers_lost).
// A restart loses only what was not stored: at most store_every_ms of progress (the progress
// history file has every point), and the stored expiry is extended at start anyway.
//
// An entry exists only for a lease whose heartbeat reached the store (that change checked the
// lease and made the job running), and is forgotten when the lease ends, so an entry that matches
// a report's (worker, epoch) is the job's current lease.
//
// Thread safety: every method is safe from any thread; none calls out while holding its mutex.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "base/mutex.h"
#include "daemon/jobs/protocol.h"

namespace jobctl::daemon::jobs {

struct LiveHeartbeat {
  LeaseRef lease;
  int64_t last_ms = 0;                         // the newest heartbeat
  std::optional<std::string> progress_json;    // the newest progress reported under this lease
  int64_t stored_expires_ms = 0;               // the lease's expiry as the store has it
};

class LiveLeases {
 public:
  LiveLeases(int64_t lease_timeout_ms, int64_t store_every_ms);

  // A heartbeat that needs no store change: `lease` has an entry here whose stored expiry is
  // more than lease_timeout - store_every ahead of `now_ms`. Records it and returns true; false
  // (nothing recorded): the heartbeat must go through the store.
  bool renew(int64_t job_id, const LeaseRef& lease, int64_t now_ms, const std::optional<std::string>& progress_json);
  // A change storing the lease's heartbeat of `now_ms` committed: the lease is running, its
  // expiry and that heartbeat's progress stored.
  void stored(int64_t job_id, const LeaseRef& lease, int64_t now_ms, const std::optional<std::string>& progress_json,
              int64_t stored_expires_ms);
  // The job's entry when it is for `lease`.
  std::optional<LiveHeartbeat> find(int64_t job_id, const LeaseRef& lease) const;
  // The lease ended (or the job is gone): its entry is dropped.
  void forget(int64_t job_id);
  // The newest heartbeat of each worker that has an entry.
  std::unordered_map<int64_t, int64_t> last_heard_by_worker() const;
  // Drops entries not heard from for longer than the lease timeout (their leases expire from
  // the store's expiry). Returns how many.
  size_t prune(int64_t now_ms);
  // Entries whose newest heartbeat is newer than the stored expiry says (last_ms + timeout past
  // it): what a shutdown stores.
  std::unordered_map<int64_t, LiveHeartbeat> unstored() const;
  size_t size() const;

  int64_t lease_timeout_ms() const { return lease_timeout_ms_; }

 private:
  const int64_t lease_timeout_ms_;
  const int64_t store_every_ms_;
  mutable Mutex mu_;
  std::unordered_map<int64_t, LiveHeartbeat> entries_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::daemon::jobs
