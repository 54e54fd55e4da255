#include "base/clock.h"

#include <gtest/gtest.h>

namespace jobctl {
namespace {

TEST(ManualClock, MovesOnlyWhenTold) {
  ManualClock c(1000);
  EXPECT_EQ(c.now_ms(), 1000);
  c.advance_ms(500);
  EXPECT_EQ(c.now_ms(), 1500);
  c.advance_seconds(2.5);
  EXPECT_EQ(c.now_ms(), 4000);
  EXPECT_DOUBLE_EQ(c.now_seconds(), 4.0);
  c.set_ms(10);
  EXPECT_EQ(c.now_ms(), 10);
}

// Time passing moves both readings; a step of the wall clock (jump_wall_ms, or set_ms back)
// moves the wall clock alone: the steady clock never goes back.
TEST(ManualClock, AWallClockStepLeavesTheSteadyClockAlone) {
  ManualClock c(1000);
  const int64_t s0 = c.steady_ms();
  c.advance_ms(500);
  EXPECT_EQ(c.steady_ms(), s0 + 500);
  c.jump_wall_ms(60'000);
  EXPECT_EQ(c.now_ms(), 61'500);
  EXPECT_EQ(c.steady_ms(), s0 + 500);
  c.jump_wall_ms(-120'000);
  EXPECT_EQ(c.now_ms(), -58'500);
  EXPECT_EQ(c.steady_ms(), s0 + 500);
  c.set_ms(0);  // forward by 58.5 s: time passed
  EXPECT_EQ(c.steady_ms(), s0 + 59'000);
  c.set_ms(-10);  // back: a step
  EXPECT_EQ(c.steady_ms(), s0 + 59'000);
}

TEST(SystemClock, TheSteadyClockNeverGoesBack) {
  SystemClock c;
  const int64_t a = c.steady_ms();
  const int64_t b = c.steady_ms();
  EXPECT_LE(a, b);
}

TEST(SystemClock, IsAfter2020) {
  SystemClock c;
  EXPECT_GT(c.now_ms(), 1'577'836'800'000);  // 2020-01-01
}

}  // namespace
}  // namespace jobctl
