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
//   - a worker that heartbeats is heard from (worker_contacts.h, for mark_silent_workers_lost).
// A restart loses only what was not stored: at most store_every_ms of progress (the progress
// history file has every point), and the stored expiry is re-based at start anyway.
//
// Silence is measured on the steady clock (last_steady_ms): a step of the wall clock neither
// expires a lease heard from within the timeout nor keeps alive one that went silent. While the
// store cannot write (a full disk, I/O errors), a heartbeat of a current lease is recorded here
// all the same (stored() with the expiry the store has), its progress kept, and written when the store takes writes again (the
// expiry pass renews it from here), so a lease never expires because of jobctld's own store.
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
#include <vector>

#include "base/mutex.h"
#include "daemon/jobs/protocol.h"

namespace jobctl::daemon::jobs {

struct LiveHeartbeat {
  LeaseRef lease;
  int64_t last_ms = 0;                         // the newest heartbeat, wall clock (what is stored and shown)
  int64_t last_steady_ms = 0;                  // the same, steady clock (what silence is measured by)
  std::optional<std::string> progress_json;    // the newest progress reported under this lease
  int64_t stored_expires_ms = 0;               // the lease's expiry as the store has it
};

class LiveLeases {
 public:
  LiveLeases(int64_t lease_timeout_ms, int64_t store_every_ms);

  // A heartbeat that needs no store change: `lease` has an entry here whose stored expiry is
  // more than lease_timeout - store_every ahead of `now_ms`. Records it and returns true; false
  // (nothing recorded): the heartbeat must go through the store.
  // `now_ms` is the wall clock, `steady_ms` the steady one, both read at the heartbeat.
  bool renew(int64_t job_id, const LeaseRef& lease, int64_t now_ms, int64_t steady_ms,
             const std::optional<std::string>& progress_json);
  // A change storing the lease's heartbeat of `now_ms` committed: the lease is running, its
  // expiry and that heartbeat's progress stored. Also a heartbeat of a lease known current and
  // running (its entry here, or the stored job read back) that the store could not write, with
  // `stored_expires_ms` as the store has it: the expiry pass stores it once the store writes again.
  void stored(int64_t job_id, const LeaseRef& lease, int64_t now_ms, int64_t steady_ms,
              const std::optional<std::string>& progress_json, int64_t stored_expires_ms);
  // The job's entry when it is for `lease`.
  std::optional<LiveHeartbeat> find(int64_t job_id, const LeaseRef& lease) const;
  // The lease ended (or the job is gone): its entry is dropped.
  void forget(int64_t job_id);
  // The jobs whose entry was not heard from for longer than the lease timeout at `steady_ms`:
  // their leases expire whatever the stored (wall-clock) expiry says.
  std::vector<int64_t> silent(int64_t steady_ms) const;
  // Drops entries not heard from for longer than the lease timeout (their leases expire from
  // the store's expiry, or silent()). Returns how many.
  size_t prune(int64_t steady_ms);
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
