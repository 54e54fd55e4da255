#include "base/fixed_decimal.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>

namespace jobctl {
namespace {

TEST(FixedDecimal, RoundsToTheGivenDecimals) {
  EXPECT_EQ(fixed_decimal(3.1, 2), "3.10");
  EXPECT_EQ(fixed_decimal(0.025, 4), "0.0250");
  EXPECT_EQ(fixed_decimal(2.5, 0), "2");   // round half to even, as printf
  EXPECT_EQ(fixed_decimal(3.5, 0), "4");
  EXPECT_EQ(fixed_decimal(0.125, 2), "0.12");  // 0.125 is exact in binary: half to even
  EXPECT_EQ(fixed_decimal(1.005, 2), "1.00");  // 1.005 is 1.00499999999999989... in binary
  EXPECT_EQ(fixed_decimal(-1.25, 1), "-1.2");
  EXPECT_EQ(fixed_decimal(1234567.891, 3), "1234567.891");
  EXPECT_EQ(fixed_decimal(7, -3), "7");  // decimals are clamped to 0..30
}

TEST(FixedDecimal, WritesEveryDoubleWithoutCuttingIt) {
  const std::string max = fixed_decimal(DBL_MAX, 30);
  EXPECT_EQ(max.size(), 309u + 1u + 30u);
  EXPECT_EQ(fixed_decimal(-DBL_MAX, 2).front(), '-');
  EXPECT_EQ(fixed_decimal(std::numeric_limits<double>::infinity(), 2), "inf");
  EXPECT_EQ(fixed_decimal(-std::numeric_limits<double>::infinity(), 2), "-inf");
  EXPECT_EQ(fixed_decimal(std::nan(""), 2), "nan");
}

}  // namespace
}  // namespace jobctl
