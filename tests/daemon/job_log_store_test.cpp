// The jobs' logs on disk (daemon/store/job_log_store.h): times kept per line, the bound and its
// rotation, a torn last line, retention, a restart reading what an earlier process wrote.
#include "daemon/store/job_log_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/temp_dir.h"

namespace jobctl::daemon::store {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kT0 = 1795000000123;  // 2026-11-18, with milliseconds

std::unique_ptr<JobLogStore> open_store(const fs::path& dir, int64_t max_bytes = int64_t{1} << 20) {
  auto s = JobLogStore::open(dir, JobLogOptions{.max_bytes_per_job = max_bytes});
  EXPECT_TRUE(s) << s.error().message;
  return std::move(*s);
}

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(JobLogStore, KeepsEachLineWithItsTimeAndNumber) {
  testing::TempDir tmp;
  auto logs = open_store(tmp.path() / "logs");
  EXPECT_TRUE(logs->read(1, {})->lines.empty());
  ASSERT_TRUE(logs->append(1, {{kT0, "first"}, {kT0 + 1500, "second\nthird\n"}, {kT0 + 2000, ""}}));
  auto page = logs->read(1, {});
  ASSERT_TRUE(page);
  ASSERT_EQ(page->lines.size(), 4u);
  EXPECT_EQ(page->lines[0].number, 1);
  EXPECT_EQ(page->lines[0].time_ms, kT0);
  EXPECT_EQ(page->lines[0].text, "first");
  EXPECT_EQ(page->lines[1].text, "second");
  EXPECT_EQ(page->lines[2].text, "third");
  EXPECT_EQ(page->lines[2].time_ms, kT0 + 1500);
  EXPECT_EQ(page->lines[3].text, "");
  EXPECT_EQ(page->next, 4);
  EXPECT_EQ(page->dropped_lines, 0);
  // The stored text is what docs/log-format.md describes.
  EXPECT_EQ(file_text(*logs->file_of(1)).substr(0, 33), "1 2026-11-18T11:06:40.123Z first\n");
  EXPECT_EQ(logs->file_of(2).error().code, ErrorCode::not_found);
  // after / since / tail.
  EXPECT_EQ(logs->read(1, {.after = 2})->lines.front().text, "third");
  auto since = logs->read(1, {.since_ms = kT0 + 1000});
  ASSERT_EQ(since->lines.size(), 3u);
  EXPECT_EQ(since->lines[0].text, "second");
  auto tail = logs->read(1, {.tail = 2});
  ASSERT_EQ(tail->lines.size(), 2u);
  EXPECT_EQ(tail->lines[0].text, "third");
  EXPECT_EQ(tail->next, 4);
  // A page cut short says so and reads on from where it stopped.
  auto first = logs->read(1, {.max_lines = 3});
  EXPECT_TRUE(first->more);
  EXPECT_EQ(first->next, 3);
  EXPECT_EQ(logs->read(1, {.after = first->next})->lines.size(), 1u);
}

TEST(JobLogStore, ARestartContinuesTheNumbersAndATornLastLineIsNeverRead) {
  testing::TempDir tmp;
  const fs::path dir = tmp.path() / "logs";
  {
    auto logs = open_store(dir);
    ASSERT_TRUE(logs->append(7, {{kT0, "a"}, {kT0, "b"}}));
  }
  // A crash mid-append: half a line with no newline.
  { std::ofstream(dir / "7.log", std::ios::app) << "3 2026-11-18T11:06:4"; }
  auto logs = open_store(dir);
  auto page = logs->read(7, {});
  ASSERT_TRUE(page);
  ASSERT_EQ(page->lines.size(), 2u);
  EXPECT_EQ(page->next, 2);
  ASSERT_TRUE(logs->append(7, {{kT0 + 5, "c"}}));
  page = logs->read(7, {});
  ASSERT_EQ(page->lines.size(), 3u);
  EXPECT_EQ(page->lines[2].number, 3);
  EXPECT_EQ(page->lines[2].text, "c");
  EXPECT_EQ(file_text(dir / "7.log").find("11:06:4\n"), std::string::npos) << "the torn line was cut off";
  // A line that is not one (a foreign edit) is skipped, not fatal.
  { std::ofstream(dir / "7.log", std::ios::app) << "not a log line\n"; }
  EXPECT_EQ(logs->read(7, {})->lines.size(), 3u);
}

TEST(JobLogStore, StaysWithinItsBoundKeepingTheStartAndTheEnd) {
  testing::TempDir tmp;
  const int64_t bound = 8 << 10;
  auto logs = open_store(tmp.path() / "logs", bound);
  const std::string filler(60, 'x');
  int64_t largest = 0;
  for (int i = 1; i <= 2000; ++i) {
    ASSERT_TRUE(logs->append(3, {{kT0 + i, "line " + std::to_string(i) + " " + filler}}));
    largest = std::max<int64_t>(largest, static_cast<int64_t>(fs::file_size(*logs->file_of(3))));
  }
  EXPECT_LE(largest, bound + 200);  // one append past the bound at most, before it is rotated
  auto page = logs->read(3, {.max_lines = 100000});
  ASSERT_TRUE(page);
  ASSERT_FALSE(page->lines.empty());
  EXPECT_EQ(page->lines.front().number, 1);  // the start is kept
  EXPECT_EQ(page->lines.back().number, 2000);  // and the end
  EXPECT_EQ(page->lines.back().text, "line 2000 " + filler);
  EXPECT_GT(page->dropped_lines, 0);
  EXPECT_EQ(static_cast<int64_t>(page->lines.size()) + page->dropped_lines, 2000);
  // Numbers only grow; the gap is where the lines were dropped.
  for (size_t i = 1; i < page->lines.size(); ++i) EXPECT_LT(page->lines[i - 1].number, page->lines[i].number);
  // A reader past the gap sees no drop; one before it is told.
  EXPECT_EQ(logs->read(3, {.after = 1999})->dropped_lines, 0);
  EXPECT_GT(logs->read(3, {.after = page->lines.front().number})->dropped_lines, 0);
  EXPECT_FALSE(fs::exists(tmp.path() / "logs" / "3.log.tmp"));
}

TEST(JobLogStore, ALongLineIsCut) {
  testing::TempDir tmp;
  auto s = JobLogStore::open(tmp.path() / "logs", JobLogOptions{.max_line_bytes = 10});
  ASSERT_TRUE(s);
  ASSERT_TRUE((*s)->append(1, {{kT0, std::string(100, 'y')}}));
  EXPECT_EQ((*s)->read(1, {})->lines.at(0).text, std::string(10, 'y') + " [cut]");
}

TEST(JobLogStore, SweepRemovesTheLogsPastTheirRetention) {
  testing::TempDir tmp;
  auto logs = open_store(tmp.path() / "logs");
  for (int64_t id : {1, 2, 3}) ASSERT_TRUE(logs->append(id, {{kT0, "job " + std::to_string(id)}}));
  std::set<int64_t> asked;
  auto removed = logs->sweep([&](int64_t id) {
    asked.insert(id);
    return id != 2;
  });
  ASSERT_TRUE(removed);
  EXPECT_EQ(*removed, 2);
  EXPECT_EQ(asked, (std::set<int64_t>{1, 2, 3}));
  EXPECT_EQ(logs->file_of(1).error().code, ErrorCode::not_found);
  EXPECT_TRUE(logs->file_of(2));
  EXPECT_TRUE(logs->read(3, {})->lines.empty());
  // A removed job's log starts afresh if lines still come.
  ASSERT_TRUE(logs->append(1, {{kT0, "late"}}));
  EXPECT_EQ(logs->read(1, {})->lines.at(0).number, 1);
}

}  // namespace
}  // namespace jobctl::daemon::store
