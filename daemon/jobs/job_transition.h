// The one way a job moves along an edge of its lifecycle, a change of state or a lease:
// scheduler::can_transition decides whether the edge exists for the job as it stands (its state
// and whether a worker holds it), and the job's row and its job_events row are written in the
// caller's transaction, so that the audit trail and the state can never disagree.
//
// Thread safety: run inside a store change (on the writer thread), like every WriteTxn call.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/expected.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::jobs {

// Moves `job` to `to` and appends an event of `type` with `detail` (a JSON object). Errors:
// conflict (the lifecycle has no such edge; nothing is written), or the store's.
Status transition_job(store::WriteTxn& txn, store::JobRow& job, store::JobState to, std::string type,
                      const nlohmann::json& detail, int64_t now_ms);

// What a lease gives the job it takes.
struct LeaseTaken {
  int64_t worker_id = 0;
  int64_t expires_ms = 0;
};

// The lease edge (scheduler::EdgeKind::lease): `lease.worker_id` takes `job`, which must be
// queued or placed and held by nobody. The job becomes placed under the next lease epoch, held by
// that worker until lease.expires_ms, with no progress yet; the event of `type` carries `detail`
// plus the worker and the epoch. Errors: conflict (no such edge; nothing is written), the store's.
Status transition_job(store::WriteTxn& txn, store::JobRow& job, const LeaseTaken& lease, std::string type,
                      nlohmann::json detail, int64_t now_ms);

// Appends an event that changes no state (a note in the job's audit trail).
Status note_job_event(store::WriteTxn& txn, int64_t job_id, std::string type, const nlohmann::json& detail,
                      int64_t now_ms);

}  // namespace jobctl::daemon::jobs
