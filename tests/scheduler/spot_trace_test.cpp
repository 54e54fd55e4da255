#include "scheduler/spot_trace.h"

#include <gtest/gtest.h>

namespace jobctl::scheduler {
namespace {

TEST(SpotTrace, ParsesTheSkypilotFormat) {
  auto t = parse_spot_trace(R"({"metadata": {"gap_seconds": 600}, "data": [1, 1, 0, 2, 0, 0], "prices": [0.9, 0.9, 0.9, 1.0, 1.0, 1.0]})");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_DOUBLE_EQ(t->gap_seconds, 600);
  EXPECT_DOUBLE_EQ(t->hours(), 1.0);
  EXPECT_TRUE(t->available_at(3));
  EXPECT_FALSE(t->available_at(4));
  EXPECT_FALSE(t->available_at(99));
  EXPECT_EQ(t->prices.size(), 6u);
}

TEST(SpotTrace, Statistics) {
  auto t = parse_spot_trace(R"({"metadata": {"gap_seconds": 3600}, "data": [1, 1, 0, 1, 0, 0, 1, 1]})");
  ASSERT_TRUE(t);
  const auto s = trace_stats(*t);
  EXPECT_DOUBLE_EQ(s.hours, 8);
  EXPECT_DOUBLE_EQ(s.availability, 5.0 / 8);
  EXPECT_EQ(s.interruptions, 2);
  EXPECT_DOUBLE_EQ(s.interruptions_per_hour, 2.0 / 5);
  EXPECT_DOUBLE_EQ(s.mean_up_hours, 5.0 / 3);
  EXPECT_DOUBLE_EQ(s.mean_down_hours, 3.0 / 2);
  const auto tail = trace_stats(*t, 4);
  EXPECT_EQ(tail.interruptions, 0);  // starting unavailable is not an interruption
  EXPECT_DOUBLE_EQ(tail.availability, 0.5);
}

TEST(SpotTrace, ErrorsNameTheField) {
  EXPECT_EQ(parse_spot_trace("{").error().code, ErrorCode::malformed_json);
  EXPECT_EQ(parse_spot_trace(R"({"data": [1]})").error().field, "metadata.gap_seconds");
  EXPECT_EQ(parse_spot_trace(R"({"metadata": {"gap_seconds": 0}, "data": [1]})").error().field, "metadata.gap_seconds");
  EXPECT_EQ(parse_spot_trace(R"({"metadata": {"gap_seconds": 30}, "data": []})").error().field, "data");
  EXPECT_EQ(parse_spot_trace(R"({"metadata": {"gap_seconds": 30}, "data": [1, -1]})").error().field, "data[1]");
  EXPECT_EQ(parse_spot_trace(R"({"metadata": {"gap_seconds": 30}, "data": [1, 0.5]})").error().field, "data[1]");
  EXPECT_EQ(parse_spot_trace(R"({"metadata": {"gap_seconds": 30}, "data": [1], "prices": [1, 2]})").error().field,
            "prices");
  EXPECT_EQ(parse_spot_trace("[1, 2]").error().code, ErrorCode::invalid_argument);
}

}  // namespace
}  // namespace jobctl::scheduler
