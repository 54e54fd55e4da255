#include "cost/spot_risk.h"

#include <cmath>

#include <gtest/gtest.h>

namespace jobctl::cost {
namespace {

constexpr double kMin = 1.0 / 60.0;  // one minute in hours

TEST(SpotRisk, YoungInterval) {
  // C = 5 min, MTBF 24 h: sqrt(2 * 5/60 * 24) = sqrt(4) = 2 h.
  EXPECT_NEAR(young_interval_hours(5 * kMin, 1.0 / 24), 2.0, 1e-12);
  // C = 0.02 h, lambda = 0.1/h: sqrt(0.4) = 0.632456 h.
  EXPECT_NEAR(young_interval_hours(0.02, 0.1), 0.6324555, 1e-7);
  EXPECT_TRUE(std::isinf(young_interval_hours(0.1, 0)));
}

TEST(SpotRisk, DalyReproducesHisPublishedFigures) {
  // Daly (2006), checkpoint 5 min: MTBF 24 h -> ~117 min; MTBF 6 h -> ~57 min; MTBF 15 min ->
  // ~9.1 min (where C is no longer small against M and Young's sqrt(2CM) = 12.2 min is far off).
  EXPECT_NEAR(daly_interval_hours(5 * kMin, 24) / kMin, 116.7, 0.1);
  EXPECT_NEAR(daly_interval_hours(5 * kMin, 6) / kMin, 56.7, 0.1);
  EXPECT_NEAR(daly_interval_hours(5 * kMin, 15 * kMin) / kMin, 9.1, 0.05);
  EXPECT_NEAR(young_interval_hours(5 * kMin, 1 / (15 * kMin)) / kMin, 12.25, 0.01);
  // C >= 2M: checkpoint once per MTBF.
  EXPECT_DOUBLE_EQ(daly_interval_hours(1.0, 0.4), 0.4);
}

TEST(SpotRisk, ExpectedRunTimeFollowsDesignFormula) {
  const double T = 10, C = 0.1, R = 0.2, lambda = 0.5;
  const double tau = daly_interval_hours(C, 1 / lambda);
  // Hand-computed: tau = sqrt(0.4) * (1 + sqrt(0.025)/3 + 0.025/9) - 0.1 = 0.5675457
  EXPECT_NEAR(tau, 0.5675457, 1e-7);
  const auto e = spot_run_estimate(T, C, R, lambda, 0.92);
  EXPECT_DOUBLE_EQ(e.checkpoint_interval_hours, tau);
  const double factor = 1 + C / tau + lambda * (tau / 2 + R);
  EXPECT_NEAR(factor, 1.4180837, 1e-7);
  EXPECT_NEAR(e.expected_hours, T * factor, 1e-12);
  EXPECT_NEAR(e.expected_cost_usd, 0.92 * T * factor, 1e-12);
  EXPECT_NEAR(e.overhead_fraction, factor - 1, 1e-12);
}

TEST(SpotRisk, NoInterruptionsNoOverhead) {
  const auto e = spot_run_estimate(5, 0.1, 0.2, 0, 1.0);
  EXPECT_DOUBLE_EQ(e.expected_hours, 5);
  EXPECT_TRUE(std::isinf(e.checkpoint_interval_hours));
  // Free checkpoints: only the restarts cost.
  EXPECT_NEAR(spot_time_factor(0, 0.25, 0.2), 1.05, 1e-12);
  // More risk, more time.
  EXPECT_LT(spot_time_factor(0.05, 0.1, 0.05), spot_time_factor(0.05, 0.1, 0.5));
}

}  // namespace
}  // namespace jobctl::cost
