#include "base/readable.h"

#include <gtest/gtest.h>

namespace jobctl::readable {
namespace {

TEST(Readable, MagnitudesReadInTheirUnit) {
  EXPECT_EQ(magnitude(0), "0");
  EXPECT_EQ(magnitude(999), "999");
  EXPECT_EQ(magnitude(101770), "101.8K");
  EXPECT_EQ(magnitude(2.5e6), "2.50M");
  EXPECT_EQ(magnitude(999960), "1.00M");
  EXPECT_EQ(magnitude(6.7383e9), "6.74B");
  EXPECT_EQ(magnitude(1.2e13), "12.0T");
  EXPECT_EQ(magnitude(4.03e19), "4.03e+19");
}

}  // namespace
}  // namespace jobctl::readable
