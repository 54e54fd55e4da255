#include "cli/table.h"

#include <gtest/gtest.h>

#include <sstream>

namespace jobctl::cli {
namespace {

TEST(Table, PadsColumnsAndCutsLongCells) {
  Table t({"ID", "NAME", "STATE"}, 10);
  t.add_row({"1", "short", "queued"});
  t.add_row({"12", "a-very-long-job-name", "running"});
  std::ostringstream out;
  t.print(out);
  EXPECT_EQ(out.str(),
            "ID  NAME        STATE\n"
            "1   short       queued\n"
            "12  a-very-lo…  running\n");
}

// A failed job's error is many lines: its cell stays on its row, cut with an ellipsis.
TEST(Table, CellsAreOneLine) {
  Table t({"ID", "PROGRESS"}, 30);
  t.add_row({"7", "jobctl-train exited 1:\nTraceback (most recent call last):\n  File \"train.py\", line 3\n"});
  t.add_row({"8", "  tabs\tand\r\nbreaks  "});
  std::ostringstream out;
  t.print(out);
  EXPECT_EQ(out.str(),
            "ID  PROGRESS\n"
            "7   jobctl-train exited 1: Traceb…\n"
            "8   tabs and breaks\n");
}

TEST(Table, CsvKeepsCellsWholeAndQuoted) {
  Table t({"ID", "NAME", "ERROR"});
  t.add_row({"1", "a,b", "two\nlines"});
  std::ostringstream out;
  t.print_csv(out);
  EXPECT_EQ(out.str(), "ID,NAME,ERROR\n1,\"a,b\",\"two\nlines\"\n");
  std::ostringstream empty;
  Table({"ID"}).print_csv(empty);
  EXPECT_EQ(empty.str(), "ID\n");
}

TEST(Table, AgesAndTimes) {
  EXPECT_EQ(age(0, 5'000), "5s");
  EXPECT_EQ(age(0, 125'000), "2m");
  EXPECT_EQ(age(0, 7'200'000), "2h");
  EXPECT_EQ(age(0, 3 * 86'400'000LL), "3d");
  EXPECT_EQ(age(10'000, 0), "0s");
  EXPECT_EQ(utc_time(0), "1970-01-01 00:00:00");
  EXPECT_EQ(display_width("é…"), 2u);
}

}  // namespace
}  // namespace jobctl::cli
