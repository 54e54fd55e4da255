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

TEST(JobState, Names) {
  for (JobState s : {JobState::queued, JobState::held, JobState::placed, JobState::running, JobState::preempted,
                     JobState::succeeded, JobState::failed, JobState::cancelled})
    EXPECT_EQ(parse_job_state(to_string(s)), s);
  EXPECT_FALSE(parse_job_state("paused"));
}

}  // namespace
}  // namespace jobctl::scheduler
