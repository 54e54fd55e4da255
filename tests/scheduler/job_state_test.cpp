#include "scheduler/job_state.h"

#include <gtest/gtest.h>

namespace jobctl::scheduler {
namespace {

TEST(JobState, LifecycleEdges) {
  using S = JobState;
  EXPECT_TRUE(can_transition(S::queued, S::placed));
  EXPECT_TRUE(can_transition(S::placed, S::running));
  EXPECT_TRUE(can_transition(S::running, S::succeeded));
  EXPECT_TRUE(can_transition(S::running, S::failed));
  EXPECT_TRUE(can_transition(S::running, S::preempted));
  EXPECT_TRUE(can_transition(S::preempted, S::queued));
  EXPECT_TRUE(can_transition(S::preempted, S::failed));
  EXPECT_TRUE(can_transition(S::queued, S::held));
  EXPECT_TRUE(can_transition(S::held, S::queued));
  for (S s : {S::queued, S::held, S::placed, S::running, S::preempted}) EXPECT_TRUE(can_transition(s, S::cancelled));
  EXPECT_FALSE(can_transition(S::queued, S::running));   // must be placed first
  EXPECT_FALSE(can_transition(S::running, S::queued));   // only through preempted
  EXPECT_FALSE(can_transition(S::held, S::placed));
  for (S t : {S::succeeded, S::failed, S::cancelled}) {
    EXPECT_TRUE(is_terminal(t));
    for (S to : {S::queued, S::running, S::cancelled, S::failed}) EXPECT_FALSE(can_transition(t, to));
  }
}

// The lease is an edge like the others: only a job no worker holds, queued or placed, is leased.
TEST(JobState, LeaseEdges) {
  using S = JobState;
  EXPECT_TRUE(can_transition(S::queued, S::placed, EdgeKind::lease, Holder::none));
  EXPECT_TRUE(can_transition(S::placed, S::placed, EdgeKind::lease, Holder::none));
  // A job a worker holds is not leased again until its lease ends.
  EXPECT_FALSE(can_transition(S::placed, S::placed, EdgeKind::lease, Holder::worker));
  for (S from : {S::held, S::running, S::preempted, S::succeeded, S::failed, S::cancelled})
    for (Holder h : {Holder::none, Holder::worker})
      EXPECT_FALSE(can_transition(from, S::placed, EdgeKind::lease, h)) << to_string(from);
  // A lease leaves the job placed; it is not a way into any other state.
  for (S to : {S::queued, S::held, S::running, S::preempted, S::succeeded, S::failed, S::cancelled})
    EXPECT_FALSE(can_transition(S::queued, to, EdgeKind::lease, Holder::none)) << to_string(to);
  // placed -> placed is the lease, not a change of state.
  EXPECT_FALSE(can_transition(S::placed, S::placed, EdgeKind::change, Holder::none));
  EXPECT_FALSE(can_transition(S::placed, S::placed));
}

// A placed job waiting for its worker and one held by it have different ways out.
TEST(JobState, PlacedEdgesDependOnTheHolder) {
  using S = JobState;
  EXPECT_TRUE(can_transition(S::placed, S::running, EdgeKind::change, Holder::worker));
  EXPECT_FALSE(can_transition(S::placed, S::running, EdgeKind::change, Holder::none));  // nobody to run it
  EXPECT_TRUE(can_transition(S::placed, S::queued, EdgeKind::change, Holder::none));    // unplaced
  EXPECT_FALSE(can_transition(S::placed, S::queued, EdgeKind::change, Holder::worker)); // only via preempted
  EXPECT_TRUE(can_transition(S::placed, S::preempted, EdgeKind::change, Holder::worker));
  EXPECT_TRUE(can_transition(S::placed, S::cancelled, EdgeKind::change, Holder::worker));
  EXPECT_TRUE(can_transition(S::placed, S::cancelled, EdgeKind::change, Holder::none));
  EXPECT_EQ(to_string(EdgeKind::lease), "lease");
}

TEST(JobState, Names) {
  for (JobState s : {JobState::queued, JobState::held, JobState::placed, JobState::running, JobState::preempted,
                     JobState::succeeded, JobState::failed, JobState::cancelled})
    EXPECT_EQ(parse_job_state(to_string(s)), s);
  EXPECT_FALSE(parse_job_state("paused"));
}

}  // namespace
}  // namespace jobctl::scheduler
