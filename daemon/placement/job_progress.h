// What a job's last progress report says about the work done, for the estimates of placement and
// of the deadline policy.
//
// Thread safety: pure function.
#pragma once

#include <optional>
#include <string>

namespace jobctl::daemon::placement {

// The fraction of the job's work already done: step / total_steps of its last heartbeat's
// progress (JSON object text), clamped to [0, 1]; 0 when there is none or it is unreadable.
double done_fraction(const std::optional<std::string>& progress_json);

}  // namespace jobctl::daemon::placement
