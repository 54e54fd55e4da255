#include "scheduler/fair_share.h"

#include <cmath>

#include <gtest/gtest.h>

namespace jobctl::scheduler {
namespace {

constexpr int64_t kHour = 3600 * 1000;

TEST(FairShare, UsageIsPriceWeightedHoursDecayedByHalfLife) {
  // Two hours at $3/h that ended just now, undecayed (half-life 0): 6.
  EXPECT_DOUBLE_EQ(decayed_usage({"a", 0, 2 * kHour, 3.0}, 2 * kHour, 0), 6.0);
  // An unpriced owned GPU counts one per hour.
  EXPECT_DOUBLE_EQ(decayed_usage({"a", 0, 2 * kHour, 0.0}, 2 * kHour, 0), 2.0);
  // A short hour that ended one half-life ago counts about half.
  const int64_t h = 7 * 24 * kHour;
  EXPECT_NEAR(decayed_usage({"a", 0, 60 * 1000, 1.0}, 60 * 1000 + h, h), 0.5 / 60, 1e-6);
  // Two half-lives: a quarter.
  EXPECT_NEAR(decayed_usage({"a", 0, 60 * 1000, 1.0}, 60 * 1000 + 2 * h, h), 0.25 / 60, 1e-6);
  // The part after now does not count; an interval wholly after now counts nothing.
  EXPECT_DOUBLE_EQ(decayed_usage({"a", 0, 4 * kHour, 1.0}, kHour, 0), 1.0);
  EXPECT_DOUBLE_EQ(decayed_usage({"a", 2 * kHour, 4 * kHour, 1.0}, kHour, 0), 0.0);
  // The exact integral over a long interval: h/ln2 * (1 - 2^-1) for one half-life ending now.
  EXPECT_NEAR(decayed_usage({"a", 0, h, 1.0}, h, h), static_cast<double>(h) / kHour / std::log(2.0) * 0.5, 1e-6);
}

TEST(FairShare, UsageSumsPerUser) {
  auto u = decayed_usage_by_user({{"a", 0, kHour, 1}, {"b", 0, kHour, 2}, {"a", kHour, 2 * kHour, 1}}, 2 * kHour, 0);
  EXPECT_DOUBLE_EQ(u["a"], 2.0);
  EXPECT_DOUBLE_EQ(u["b"], 2.0);
}

TEST(FairShare, ClassicFactorNormalisesUsageAndShares) {
  // Equal shares; a used 3, b used 1: a = 2^-(0.75/0.5) = 2^-1.5, b = 2^-(0.25/0.5) = 2^-0.5; c used nothing: 1.
  auto f = fair_share_factors({"a", "b", "c"}, {{"a", 3.0}, {"b", 1.0}}, {});
  EXPECT_NEAR(f["a"].factor, std::exp2(-0.75 / (1.0 / 3)), 1e-12);
  EXPECT_NEAR(f["b"].factor, std::exp2(-0.25 / (1.0 / 3)), 1e-12);
  EXPECT_DOUBLE_EQ(f["c"].factor, 1.0);
  EXPECT_NEAR(f["a"].norm_share, 1.0 / 3, 1e-12);
  // Nobody used anything: every factor is 1.
  auto none = fair_share_factors({"a", "b"}, {}, {});
  EXPECT_DOUBLE_EQ(none["a"].factor, 1.0);
  EXPECT_DOUBLE_EQ(none["b"].factor, 1.0);
  // A user who used exactly their share: 1/2. a has share 3, b share 1; a used 3 of 4.
  auto s = fair_share_factors({"a", "b"}, {{"a", 3.0}, {"b", 1.0}}, {{"a", 3.0}});
  EXPECT_NEAR(s["a"].factor, 0.5, 1e-12);
  EXPECT_NEAR(s["b"].factor, 0.5, 1e-12);
  // A user with share 0 comes last once anyone used anything.
  auto zero = fair_share_factors({"a", "b"}, {{"a", 1.0}}, {{"b", 0.0}});
  EXPECT_DOUBLE_EQ(zero["b"].factor, 1.0);  // used nothing
  auto zero_used = fair_share_factors({"a", "b"}, {{"a", 1.0}, {"b", 1.0}}, {{"b", 0.0}});
  EXPECT_DOUBLE_EQ(zero_used["b"].factor, 0.0);
}

TEST(FairShare, OrderPutsTheLighterUserFirstAtEqualPriority) {
  FairShareWeights w;
  // Heavy user's jobs 1..3 (F = 0.25), older; light user's 4 and 5 (F = 1), a few seconds younger.
  std::vector<OrderedJob> jobs = {{1, 50, 0, 1, 0.25}, {2, 50, 1, 1, 0.25}, {3, 50, 2, 1, 0.25},
                                  {4, 50, 5000, 1, 1.0}, {5, 50, 5001, 1, 1.0}};
  EXPECT_EQ(fair_share_order(jobs, 10000, w), (std::vector<int64_t>{4, 5, 1, 2, 3}));
  // Priority outweighs fair share: ten points are 1000, F at most 1000.
  jobs[2].priority = 61;
  EXPECT_EQ(fair_share_order(jobs, 10000, w), (std::vector<int64_t>{3, 4, 5, 1, 2}));
  // With fair share weighed 0 the plain queue order stands (ages differ by less than the age
  // weight can tell at a few seconds; ties fall back to priority, then age, then id).
  w.fair_share = 0;
  jobs[2].priority = 50;
  EXPECT_EQ(fair_share_order(jobs, 10000, w), (std::vector<int64_t>{1, 2, 3, 4, 5}));
}

TEST(FairShare, ScoreIsTheDocumentedWeightedSum) {
  FairShareWeights w;
  w.size = 50;
  const int64_t age = w.max_age_ms / 2;
  // 10000 * 0.6 + 1000 * 0.5 + 100 * 0.5 + 50 * 2/4.
  EXPECT_DOUBLE_EQ(order_score({1, 60, 0, 2, 0.5}, age, 4, w), 6000 + 500 + 50 + 25);
  // Age saturates at max_age.
  EXPECT_DOUBLE_EQ(order_score({1, 0, 0, 4, 0}, 3 * w.max_age_ms, 4, w), 100 + 50);
}

}  // namespace
}  // namespace jobctl::scheduler
