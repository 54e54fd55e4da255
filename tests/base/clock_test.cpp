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

TEST(SystemClock, IsAfter2020) {
  SystemClock c;
  EXPECT_GT(c.now_ms(), 1'577'836'800'000);  // 2020-01-01
}

}  // namespace
}  // namespace jobctl
