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

// Which holder an edge needs.
enum class NeedsHolder { any, none, worker };

struct Edge {
  JobState from;
  JobState to;
  EdgeKind kind;
  NeedsHolder holder;
};

// Every edge of the lifecycle but the cancels (any non-terminal state -> cancelled, any holder).
constexpr Edge kEdges[] = {
    {JobState::queued, JobState::placed, EdgeKind::change, NeedsHolder::none},      // placement placed it
    {JobState::queued, JobState::held, EdgeKind::change, NeedsHolder::any},
    {JobState::held, JobState::queued, EdgeKind::change, NeedsHolder::any},
    {JobState::placed, JobState::running, EdgeKind::change, NeedsHolder::worker},   // its worker started it
    {JobState::placed, JobState::preempted, EdgeKind::change, NeedsHolder::any},
    {JobState::placed, JobState::queued, EdgeKind::change, NeedsHolder::none},      // unplaced: nobody took it
    {JobState::running, JobState::succeeded, EdgeKind::change, NeedsHolder::any},
    {JobState::running, JobState::failed, EdgeKind::change, NeedsHolder::any},
    {JobState::running, JobState::preempted, EdgeKind::change, NeedsHolder::any},
    {JobState::preempted, JobState::queued, EdgeKind::change, NeedsHolder::any},
    {JobState::preempted, JobState::failed, EdgeKind::change, NeedsHolder::any},
    {JobState::queued, JobState::placed, EdgeKind::lease, NeedsHolder::none},
    {JobState::placed, JobState::placed, EdgeKind::lease, NeedsHolder::none},
};

bool holder_fits(NeedsHolder needs, Holder holder) {
  switch (needs) {
    case NeedsHolder::any: return true;
    case NeedsHolder::none: return holder == Holder::none;
    case NeedsHolder::worker: return holder == Holder::worker;
  }
  return false;
}

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

std::string_view to_string(EdgeKind k) {
  switch (k) {
    case EdgeKind::change: return "change";
    case EdgeKind::lease: return "lease";
  }
  return "unknown";
}

bool can_transition(JobState from, JobState to, EdgeKind kind, Holder holder) {
  if (is_terminal(from)) return false;
  if (kind == EdgeKind::change && to == JobState::cancelled) return true;
  for (const Edge& e : kEdges)
    if (e.from == from && e.to == to && e.kind == kind && holder_fits(e.holder, holder)) return true;
  return false;
}

bool can_transition(JobState from, JobState to) {
  return can_transition(from, to, EdgeKind::change, Holder::none) ||
         can_transition(from, to, EdgeKind::change, Holder::worker);
}

}  // namespace jobctl::scheduler
