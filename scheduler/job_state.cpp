#include "scheduler/job_state.h"

#include <array>
#include <utility>

namespace jobctl::scheduler {

namespace {
constexpr std::array<std::pair<JobState, std::string_view>, 8> kStateNames{{
    {JobState::queued, "queued"},
    {JobState::held, "held"},
    {JobState::placed, "placed"},
    {JobState::running, "running"},
    {JobState::preempted, "preempted"},
    {JobState::succeeded, "succeeded"},
    {JobState::failed, "failed"},
    {JobState::cancelled, "cancelled"},
}};
}  // namespace

std::string_view to_string(JobState s) {
  for (const auto& [state, name] : kStateNames)
    if (state == s) return name;
  return "unknown";
}

std::optional<JobState> parse_job_state(std::string_view name) {
  for (const auto& [state, n] : kStateNames)
    if (n == name) return state;
  return std::nullopt;
}

bool is_terminal(JobState s) {
  return s == JobState::succeeded || s == JobState::failed || s == JobState::cancelled;
}

bool can_transition(JobState from, JobState to) {
  using S = JobState;
  if (is_terminal(from)) return false;
  if (to == S::cancelled) return true;
  switch (from) {
    case S::queued: return to == S::placed || to == S::held;
    case S::held: return to == S::queued;
    case S::placed: return to == S::running || to == S::preempted || to == S::queued;
    case S::running: return to == S::succeeded || to == S::failed || to == S::preempted;
    case S::preempted: return to == S::queued || to == S::failed;
    default: return false;
  }
}

}  // namespace jobctl::scheduler
