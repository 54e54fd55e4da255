// The one way a job changes state: scheduler::can_transition decides whether the move is legal,
// and the job's row and its job_events row are written in the caller's transaction, so that the
// audit trail and the state can never disagree.
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
// conflict (the state machine forbids the move; nothing is written), or the store's.
Status transition_job(store::WriteTxn& txn, store::JobRow& job, store::JobState to, std::string type,
                      const nlohmann::json& detail, int64_t now_ms);

// Appends an event that changes no state (a note in the job's audit trail).
Status note_job_event(store::WriteTxn& txn, int64_t job_id, std::string type, const nlohmann::json& detail,
                      int64_t now_ms);

}  // namespace jobctl::daemon::jobs
