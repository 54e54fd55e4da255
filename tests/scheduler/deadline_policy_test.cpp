#include "scheduler/deadline_policy.h"

#include <ostream>

#include <gtest/gtest.h>

#include "scheduler/adaptive_progress.h"

namespace jobctl::scheduler {

void PrintTo(Capacity c, std::ostream* os) { *os << to_string(c); }

namespace {

// The paper's job: 72 h of compute by 84 h, changeover 0.3 h, decisions every 32 s.
ProgressState state(double t, double done, Capacity current, bool spot) {
  ProgressState s;
  s.elapsed_hours = t;
  s.deadline_hours = 84;
  s.total_compute_hours = 72;
  s.done_compute_hours = done;
  s.changeover_hours = 0.3;
  s.decision_period_hours = 32.0 / 3600;
  s.current = current;
  s.spot_available = spot;
  return s;
}

std::unique_ptr<DeadlinePolicy> policy(std::string_view name) {
  auto p = make_deadline_policy(name);
  EXPECT_NE(p, nullptr) << name;
  return p;
}

TEST(UniformProgress, FollowsTheLine) {
  auto up = policy("up");
  // expected_progress(10) = 10 * 72/84 = 8.571.
  EXPECT_EQ(up->decide(state(10, 8.0, Capacity::none, false)), Capacity::on_demand);  // behind, no spot
  EXPECT_EQ(up->decide(state(10, 8.0, Capacity::none, true)), Capacity::spot);        // behind, spot: take it
  EXPECT_EQ(up->decide(state(10, 9.0, Capacity::none, false)), Capacity::none);       // ahead, no spot: wait
  EXPECT_EQ(up->decide(state(10, 9.0, Capacity::spot, true)), Capacity::spot);
}

TEST(UniformProgress, HysteresisOnOnDemand) {
  auto up = policy("up");
  // On on-demand: stay until ahead of expected_progress(t + 2d) = 10.6 * 72/84 = 9.086.
  EXPECT_EQ(up->decide(state(10, 9.0, Capacity::on_demand, true)), Capacity::on_demand);
  EXPECT_EQ(up->decide(state(10, 9.0, Capacity::on_demand, false)), Capacity::on_demand);
  EXPECT_EQ(up->decide(state(10, 9.1, Capacity::on_demand, true)), Capacity::spot);
  EXPECT_EQ(up->decide(state(10, 9.1, Capacity::on_demand, false)), Capacity::none);
}

TEST(UniformProgress, SafetyNetIsForGood) {
  auto up = policy("up");
  // Remaining time 14 < remaining compute 13.5 + 2d = 14.1: on-demand for good.
  EXPECT_EQ(up->decide(state(70, 58.5, Capacity::spot, true)), Capacity::on_demand);
  EXPECT_TRUE(up->committed_to_on_demand());
  EXPECT_EQ(up->decide(state(71, 70, Capacity::on_demand, true)), Capacity::on_demand);
  up->reset();
  EXPECT_FALSE(up->committed_to_on_demand());
  EXPECT_EQ(up->decide(state(70, 60, Capacity::spot, true)), Capacity::spot);  // 14 >= 12 + 0.6
}

TEST(Greedy, SpotOrWaitThenOnDemand) {
  auto g = policy("greedy");
  EXPECT_EQ(g->decide(state(10, 0, Capacity::none, true)), Capacity::spot);
  EXPECT_EQ(g->decide(state(10, 0, Capacity::none, false)), Capacity::none);  // far behind: still waits
  EXPECT_EQ(g->decide(state(11.5, 0, Capacity::none, false)), Capacity::on_demand);  // 72.5 < 72.6
  EXPECT_EQ(g->decide(state(12, 1, Capacity::on_demand, true)), Capacity::on_demand);
}

TEST(OnDemandAndLocalFirst, Baselines) {
  auto od = policy("on-demand");
  EXPECT_EQ(od->decide(state(0, 0, Capacity::none, true)), Capacity::on_demand);
  auto lf = policy("local-first");
  auto s = state(0, 0, Capacity::none, true);
  EXPECT_EQ(lf->decide(s), Capacity::on_demand);  // no local GPU free: on-demand, never spot
  s.local_available = true;
  EXPECT_EQ(lf->decide(s), Capacity::local);
  auto late = state(83.5, 71.7, Capacity::on_demand, false);  // switching would miss the deadline
  late.local_available = true;
  EXPECT_EQ(lf->decide(late), Capacity::on_demand);
}

TEST(DeadlinePolicy, GuardWhenDecisionsAreFarApart) {
  // Decisions an hour apart: greedy's 2d net (remaining 72.7 >= 72 + 0.6) would wait, but waiting
  // an hour then starting on-demand (d = 0.3) would end at 84.0 + 0.3 > 84.
  auto g = policy("greedy");
  auto s = state(11.3, 0, Capacity::none, false);
  s.decision_period_hours = 1.0;
  EXPECT_EQ(g->decide(s), Capacity::on_demand);
  EXPECT_TRUE(g->committed_to_on_demand());
  EXPECT_TRUE(can_defer_on_demand(state(11.3, 0, Capacity::none, false), Capacity::none));
  // Running spot for the period counts the progress it is sure to make.
  auto r = state(11.3, 0, Capacity::spot, true);
  r.decision_period_hours = 1.0;
  EXPECT_TRUE(can_defer_on_demand(r, Capacity::spot));    // 11.3 + 1 + 0.3 + 71 = 83.6
  EXPECT_FALSE(can_defer_on_demand(r, Capacity::none));   // 11.3 + 1 + 0.3 + 72 = 84.6
}

TEST(DeadlinePolicy, NeverSpotWhenUnavailable) {
  for (auto name : deadline_policy_names()) {
    auto p = policy(name);
    for (double t : {0.0, 5.0, 20.0}) {
      const auto c = p->decide(state(t, t * 0.9, Capacity::none, false));
      EXPECT_NE(c, Capacity::spot) << name;
      EXPECT_NE(c, Capacity::local) << name;
    }
  }
  EXPECT_EQ(make_deadline_policy("fastest"), nullptr);
  EXPECT_EQ(deadline_policy_names().size(), 6u);
}

TEST(Adaptive, LearnsAvailabilityAndWaitsForStableSpot) {
  AdaptiveProgressPolicy a;
  // Start: the prior is C0/R0 = 6/7; nothing observed yet.
  EXPECT_EQ(a.decide(state(0, 0, Capacity::none, true)), Capacity::spot);
  EXPECT_NEAR(a.availability_estimate(), 72.0 / 84, 1e-12);
  // 6 hours of spot, then 6 without: a = (6 + 6/7 * 6) / (12 + 6).
  a.decide(state(6, 5.7, Capacity::spot, false));
  a.decide(state(12, 5.7, Capacity::none, false));
  EXPECT_NEAR(a.availability_estimate(), (6 + 72.0 / 84 * 6) / 18, 1e-12);
  // Slack is 84-12-66.3 = 5.7 < (1 - a) * 72 + 0.6: on-demand.
  EXPECT_EQ(a.decide(state(12.01, 5.7, Capacity::none, false)), Capacity::on_demand);
  // Spot comes back: stay on on-demand until it has been up for 0.5 h.
  EXPECT_EQ(a.decide(state(13, 6.4, Capacity::on_demand, true)), Capacity::on_demand);
  EXPECT_EQ(a.decide(state(13.4, 6.8, Capacity::on_demand, true)), Capacity::on_demand);
  EXPECT_EQ(a.decide(state(13.5, 6.9, Capacity::on_demand, true)), Capacity::spot);
}

}  // namespace
}  // namespace jobctl::scheduler
