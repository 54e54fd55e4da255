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
// and the lease, the step by which a worker takes a job that no worker holds:
//
//   queued -> placed  (lease)   with placement off: any fitting worker takes a queued job
//   placed -> placed  (lease)   placement chose where; a worker there takes it
//
// A placed job is either waiting for its worker (nobody holds it) or held by one; the edges out
// of placed say which: only a held job starts running, only a waiting one goes back to the queue
// unplaced, and only a waiting one is leased. A held job is leased again only after its lease
// ends (-> preempted -> queued).
//
// Every step, the lease included, is checked here, so no code path can move a job along an edge
// the design does not have.
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

// What an edge of the lifecycle does.
enum class EdgeKind {
  change,  // the job's state changes
  lease,   // a worker takes the job (its state may stay placed): a new lease epoch
};
std::string_view to_string(EdgeKind k);

// Whether a worker holds the job's lease when the step is taken.
enum class Holder { none, worker };

// True when the lifecycle has the edge from -> to of kind `kind` for a job held by `holder`.
bool can_transition(JobState from, JobState to, EdgeKind kind, Holder holder);

// True when the lifecycle has the change of state from -> to for some holder.
bool can_transition(JobState from, JobState to);

}  // namespace jobctl::scheduler
