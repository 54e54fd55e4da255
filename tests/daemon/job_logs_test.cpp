#include "daemon/jobs/job_logs.h"

#include <gtest/gtest.h>

namespace jobctl::daemon::jobs {
namespace {

TEST(JobLogs, KeepsTheLastBytesAndMarksWhatWasDropped) {
  JobLogs logs(32, 2);
  EXPECT_EQ(logs.read(1, 0).text, "");
  logs.append(1, "line one\n");
  LogChunk c = logs.read(1, 0);
  EXPECT_EQ(c.text, "line one\n");
  EXPECT_EQ(c.next, 9);
  logs.append(1, "line two\nline three\nline four\n");
  c = logs.read(1, 9);
  EXPECT_EQ(c.dropped_bytes, 0);
  EXPECT_EQ(c.text, "line two\nline three\nline four\n");
  // More than 32 bytes in all: the oldest whole lines are dropped, and a reader from 0 is told.
  c = logs.read(1, 0);
  EXPECT_GT(c.dropped_bytes, 0);
  EXPECT_EQ(c.text.rfind("[... " + std::to_string(c.dropped_bytes) + " bytes of earlier output dropped ...]\n", 0), 0u)
      << c.text;
  EXPECT_EQ(c.next, 9 + 30);
  EXPECT_EQ(logs.read(1, c.next).text, "");
  // At most two jobs: the one written to longest ago is forgotten.
  logs.append(2, "b\n");
  logs.append(3, "c\n");
  EXPECT_EQ(logs.read(1, 0).text, "");
  EXPECT_EQ(logs.read(3, 0).text, "c\n");
}

}  // namespace
}  // namespace jobctl::daemon::jobs
