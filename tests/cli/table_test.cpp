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
