// What a job's last progress report says about the work done, for the estimates of placement and
// of the deadline policy.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/expected.h"
#include "daemon/store/records.h"

namespace jobctl::daemon::placement {

// The fraction of job `job_id`'s work already done: step / total_steps of its last heartbeat's
// progress (store::decode_progress), clamped to [0, 1]; 0 when there is none yet. Progress that
// does not decode is an error naming the job.
Expected<double> done_fraction(const std::optional<std::string>& progress_json, int64_t job_id);

// When a leased job is expected to end (ms since the epoch): with progress reported, now plus its
// chosen option's hours for the work left; with none yet, its lease's start plus those hours (so
// the estimate runs down while the job runs, rather than staying a full estimate away). A lease
// without a placement (no estimate) is taken to run for an hour from now.
Expected<int64_t> expected_end_ms(const store::LeaseSummary& lease, int64_t now_ms);

// Per worker, one entry per GPU its leases hold: when the job holding it is expected to end. A
// lease holds the GPUs its job asked for (at least one).
Expected<std::map<int64_t, std::vector<int64_t>>> held_gpu_ends(const std::vector<store::LeaseSummary>& leases,
                                                                 int64_t now_ms);

}  // namespace jobctl::daemon::placement
