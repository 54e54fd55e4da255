#include "base/expected.h"

#include <gtest/gtest.h>

#include <memory>

namespace jobctl {
namespace {

Expected<int> half(int x) {
  if (x % 2) return make_error(ErrorCode::invalid_argument, "odd", "x");
  return x / 2;
}

TEST(Expected, ValueOrError) {
  auto a = half(4);
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, 2);
  auto b = half(3);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(b.error().field, "x");
}

TEST(Expected, MoveOnlyValues) {
  Expected<std::unique_ptr<int>> p(std::make_unique<int>(5));
  ASSERT_TRUE(p.has_value());
  std::unique_ptr<int> taken = std::move(p).value();
  EXPECT_EQ(*taken, 5);
}

TEST(Expected, StatusCarriesTheError) {
  Status ok = ok_status();
  EXPECT_TRUE(ok);
  Status bad = Unexpected{make_error(ErrorCode::io, "disk full")};
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "disk full");
}

}  // namespace
}  // namespace jobctl
