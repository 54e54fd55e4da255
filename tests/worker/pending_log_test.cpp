// The job's log awaiting delivery: each line stamped when it was read, what a heartbeat took is
// dropped only once delivered, lines written meanwhile stay, and what was dropped past the cap is
// reported once.
#include "worker/pending_log.h"

#include <gtest/gtest.h>

#include <string>

#include "base/clock.h"

namespace jobctl::worker {
namespace {

std::string text_of(const PendingLog::Taken& t) {
  std::string s;
  for (const auto& l : t.lines) s += l.text + "\n";
  return s;
}

TEST(PendingLog, EachLineKeepsTheTimeItWasRead) {
  ManualClock clock(1000);
  PendingLog log(1024, clock);
  log.append("one");
  clock.advance_ms(2500);
  log.append("two");
  const auto taken = log.take();
  ASSERT_EQ(taken.lines.size(), 2u);
  EXPECT_EQ(taken.lines[0].time_ms, 1000);
  EXPECT_EQ(taken.lines[1].time_ms, 3500);
}

TEST(PendingLog, DeliveredTextIsDroppedAndLaterLinesStay) {
  ManualClock clock;
  PendingLog log(1024, clock);
  EXPECT_TRUE(log.empty());
  log.append("one");
  log.append("two");
  const auto taken = log.take();
  EXPECT_EQ(text_of(taken), "one\ntwo\n");
  log.append("three");  // while the heartbeat is in flight
  log.delivered(taken);
  EXPECT_EQ(text_of(log.take()), "three\n");
}

TEST(PendingLog, AnUndeliveredTakeKeepsEverything) {
  ManualClock clock;
  PendingLog log(1024, clock);
  log.append("one");
  (void)log.take();  // the heartbeat failed: delivered() is not called
  log.append("two");
  EXPECT_EQ(text_of(log.take()), "one\ntwo\n");
}

TEST(PendingLog, PastTheCapTheOldestIsDroppedAndReportedOnce) {
  ManualClock clock;
  PendingLog log(100, clock);
  for (int i = 0; i < 30; ++i) log.append("line " + std::to_string(i));  // 7-8 bytes each
  const auto taken = log.take();
  EXPECT_GT(taken.dropped, 0);
  const std::string text = text_of(taken);
  EXPECT_EQ(text.rfind("[... " + std::to_string(taken.dropped) + " bytes of output dropped", 0), 0u) << text;
  EXPECT_NE(text.find("line 29\n"), std::string::npos);
  log.delivered(taken);
  EXPECT_TRUE(log.empty());
  log.append("next");
  EXPECT_EQ(text_of(log.take()), "next\n");  // no marker again
}

TEST(PendingLog, ManyShortLinesStayWithinTheCapOfAHeartbeat) {
  ManualClock clock;
  PendingLog log(4096, clock);
  for (int i = 0; i < 10000; ++i) log.append("");
  const auto taken = log.take();
  EXPECT_GT(taken.dropped, 0);
  // Each line travels as {"time_ms":...,"text":"..."}: what is kept must fit the cap as sent.
  EXPECT_LE(protocol::to_json(protocol::HeartbeatReport{{1, 1}, std::nullopt, taken.lines}).dump().size(), 4096u + 200u);
}

TEST(PendingLog, ADropDuringDeliveryOfUndeliveredBytesIsReported) {
  ManualClock clock;
  PendingLog log(40, clock);
  log.append("0123456789");  // 11 bytes
  const auto taken = log.take();
  for (int i = 0; i < 8; ++i) log.append("abcdefghij");  // past the cap while in flight
  log.delivered(taken);
  const auto next = log.take();
  // Of the bytes cut meanwhile, the 11 delivered ones are not lost; the rest are.
  EXPECT_EQ(next.dropped, 11 * 9 - 11 - 11 * static_cast<int64_t>(next.lines.size() - 1));
  const std::string text = text_of(next);
  EXPECT_EQ(text.find("0123456789"), std::string::npos);
  EXPECT_NE(text.find("abcdefghij\n"), std::string::npos);
}

}  // namespace
}  // namespace jobctl::worker
