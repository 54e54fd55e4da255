// The progress history behind the dashboard's curves (daemon/store/progress_history.h).
#include "daemon/store/progress_history.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/clock.h"
#include "tests/support/temp_dir.h"

namespace {

using jobctl::ManualClock;
using jobctl::daemon::store::ProgressHistory;
using nlohmann::json;

std::string point(int step, double loss, int epochs_done = 0) {
  return json{{"step", step}, {"loss", loss}, {"epochs_done", epochs_done}}.dump();
}

TEST(ProgressHistory, RecordsAndReadsInOrder) {
  jobctl::testing::TempDir tmp;
  ManualClock clock;
  auto h = ProgressHistory::open(tmp.path() / "progress", clock);
  ASSERT_TRUE(h);
  auto empty = (*h)->read(7, 100);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE((*h)->record(7, point(i * 10, 1.0 / i)));
    clock.advance_ms(2000);
  }
  auto pts = (*h)->read(7, 100);
  ASSERT_TRUE(pts);
  ASSERT_EQ(pts->size(), 5u);
  EXPECT_EQ((*pts)[0]["progress"]["step"], 10);
  EXPECT_EQ((*pts)[4]["progress"]["step"], 50);
  EXPECT_EQ((*pts)[1]["time_ms"].get<int64_t>() - (*pts)[0]["time_ms"].get<int64_t>(), 2000);
  EXPECT_TRUE((*h)->read(8, 100)->empty());  // other jobs are separate
}

TEST(ProgressHistory, RejectsNonObjects) {
  jobctl::testing::TempDir tmp;
  ManualClock clock;
  auto h = ProgressHistory::open(tmp.path(), clock);
  ASSERT_TRUE(h);
  EXPECT_FALSE((*h)->record(1, "[1,2]"));
  EXPECT_FALSE((*h)->record(1, "not json"));
  EXPECT_TRUE((*h)->read(1, 10)->empty());
}

TEST(ProgressHistory, RateLimitedButEveryEpochEndKept) {
  jobctl::testing::TempDir tmp;
  ManualClock clock;
  auto h = ProgressHistory::open(tmp.path(), clock);
  ASSERT_TRUE(h);
  ASSERT_TRUE((*h)->record(1, point(1, 2.0, 0)));
  clock.advance_ms(300);
  ASSERT_TRUE((*h)->record(1, point(2, 1.9, 0)));  // too soon: dropped
  clock.advance_ms(100);
  ASSERT_TRUE((*h)->record(1, point(3, 1.8, 1)));  // an epoch ended: kept
  clock.advance_ms(1000);
  ASSERT_TRUE((*h)->record(1, point(4, 1.7, 1)));  // a second later: kept
  auto pts = (*h)->read(1, 100);
  ASSERT_EQ(pts->size(), 3u);
  EXPECT_EQ((*pts)[0]["progress"]["step"], 1);
  EXPECT_EQ((*pts)[1]["progress"]["step"], 3);
  EXPECT_EQ((*pts)[2]["progress"]["step"], 4);
}

TEST(ProgressHistory, ThinsLongSeriesKeepingFirstAndLast) {
  jobctl::testing::TempDir tmp;
  ManualClock clock;
  auto h = ProgressHistory::open(tmp.path(), clock);
  ASSERT_TRUE(h);
  for (int i = 0; i < 101; ++i) {
    ASSERT_TRUE((*h)->record(3, point(i, 1.0)));
    clock.advance_ms(1000);
  }
  auto pts = (*h)->read(3, 11);
  ASSERT_EQ(pts->size(), 11u);
  for (int i = 0; i < 11; ++i) EXPECT_EQ((*pts)[static_cast<size_t>(i)]["progress"]["step"], i * 10);
}

TEST(ProgressHistory, SkipsATornLineAndContinuesAfterRestart) {
  jobctl::testing::TempDir tmp;
  ManualClock clock;
  {
    auto h = ProgressHistory::open(tmp.path(), clock);
    ASSERT_TRUE((*h)->record(5, point(1, 1.0)));
  }
  {  // a crash in the middle of an append
    std::ofstream f(tmp.path() / "5.jsonl", std::ios::app);
    f << "{\"time_ms\": 17, \"progr";
  }
  auto h = ProgressHistory::open(tmp.path(), clock);
  clock.advance_ms(200);
  ASSERT_TRUE((*h)->record(5, point(2, 0.9)));  // the restart remembers the last point's time: dropped
  clock.advance_ms(1000);
  ASSERT_TRUE((*h)->record(5, point(3, 0.8)));  // kept, on its own line after the torn one
  clock.advance_ms(1000);
  ASSERT_TRUE((*h)->record(5, point(4, 0.7)));
  auto pts = (*h)->read(5, 100);
  ASSERT_TRUE(pts);
  ASSERT_EQ(pts->size(), 3u);
  EXPECT_EQ((*pts)[0]["progress"]["step"], 1);
  EXPECT_EQ((*pts)[1]["progress"]["step"], 3);
  EXPECT_EQ((*pts)[2]["progress"]["step"], 4);
}

}  // namespace
