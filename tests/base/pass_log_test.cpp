#include "base/pass_log.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace jobctl {
namespace {

struct Lines final : Log {
  void write(std::string_view line) override { lines.emplace_back(line); }
  std::vector<std::string> lines;
};

TEST(PassLog, AFailureIsLoggedWithWhatFailedThenThrottledThenTheRecovery) {
  Lines log;
  PassLog pass("lease expiry", 60'000);
  pass.report(Status{}, log, 0);
  EXPECT_TRUE(log.lines.empty()) << "a success after successes says nothing";

  const Status closed = make_error(ErrorCode::unavailable, "the store is closed");
  pass.report(closed, log, 1'000);
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_EQ(log.lines[0], "lease expiry failed: unavailable: the store is closed");
  pass.report(closed, log, 2'000);
  pass.report(closed, log, 30'000);
  EXPECT_EQ(log.lines.size(), 1u) << "the same failure again within a minute: not repeated";
  pass.report(closed, log, 61'000);
  ASSERT_EQ(log.lines.size(), 2u);
  EXPECT_EQ(log.lines[1], "lease expiry failed: unavailable: the store is closed (4 failed passes so far)");

  pass.report(make_error(ErrorCode::invalid_argument, "bad spec", "train.epochs"), log, 62'000);
  ASSERT_EQ(log.lines.size(), 3u);
  EXPECT_EQ(log.lines[2], "lease expiry failed: invalid_argument: bad spec (train.epochs)") << "a new failure at once";

  pass.report(Status{}, log, 63'000);
  ASSERT_EQ(log.lines.size(), 4u);
  EXPECT_EQ(log.lines[3], "lease expiry recovered after 5 failed passes");
  pass.report(Status{}, log, 64'000);
  EXPECT_EQ(log.lines.size(), 4u);
  pass.report(closed, log, 65'000);
  EXPECT_EQ(log.lines.size(), 5u) << "a failure after a recovery is logged at once";
}

}  // namespace
}  // namespace jobctl
