// What a job's last progress report says about the work done, for the estimates of placement and
// of the deadline policy.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/expected.h"

namespace jobctl::daemon::placement {

// The fraction of job `job_id`'s work already done: step / total_steps of its last heartbeat's
// progress (store::decode_progress), clamped to [0, 1]; 0 when there is none yet. Progress that
// does not decode is an error naming the job.
Expected<double> done_fraction(const std::optional<std::string>& progress_json, int64_t job_id);

}  // namespace jobctl::daemon::placement
