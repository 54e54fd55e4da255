// The job lifecycle (docs/architecture.md "Job lifecycle"):
//
//   queued -> placed -> running -> succeeded | failed | cancelled
//   running | placed -> preempted -> queued   (an interruption: spot reclaim, worker death, lease
//                                              expiry; the latest checkpoint stays attached)
//   queued <-> held                           (held: waiting on something other than capacity,
//                                              e.g. a budget; the reason is stored)
//   any non-terminal state -> cancelled
//   preempted -> failed                       (too many recoveries)
//
// Every change of state is checked here, so no code path can move a job along an edge the
// design does not have.
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

namespace jobctl::scheduler {

enum class JobState { queued, held, placed, running, preempted, succeeded, failed, cancelled };

std::string_view to_string(JobState s);
std::optional<JobState> parse_job_state(std::string_view name);

// True for succeeded, failed and cancelled: nothing moves a job out of these.
bool is_terminal(JobState s);

// True when the lifecycle has the edge from -> to.
bool can_transition(JobState from, JobState to);

}  // namespace jobctl::scheduler
