// The job's log awaiting delivery: what a heartbeat took is dropped only once delivered, lines
// written meanwhile stay, and what was dropped past the cap is reported once.
#include "worker/pending_log.h"

#include <gtest/gtest.h>

#include <string>

namespace jobctl::worker {
namespace {

TEST(PendingLog, DeliveredTextIsDroppedAndLaterLinesStay) {
  PendingLog log(1024);
  EXPECT_TRUE(log.empty());
  log.append("one");
  log.append("two");
  const auto taken = log.take();
  EXPECT_EQ(taken.text, "one\ntwo\n");
  log.append("three");  // while the heartbeat is in flight
  log.delivered(taken);
  EXPECT_EQ(log.take().text, "three\n");
}

TEST(PendingLog, AnUndeliveredTakeKeepsEverything) {
  PendingLog log(1024);
  log.append("one");
  (void)log.take();  // the heartbeat failed: delivered() is not called
  log.append("two");
  EXPECT_EQ(log.take().text, "one\ntwo\n");
}

TEST(PendingLog, PastTheCapTheOldestIsDroppedAndReportedOnce) {
  PendingLog log(100);
  for (int i = 0; i < 30; ++i) log.append("line " + std::to_string(i));  // 7-8 bytes each
  const auto taken = log.take();
  EXPECT_GT(taken.dropped, 0);
  EXPECT_EQ(taken.text.rfind("[... " + std::to_string(taken.dropped) + " bytes of output dropped", 0), 0u) << taken.text;
  EXPECT_NE(taken.text.find("line 29\n"), std::string::npos);
  EXPECT_LE(taken.bytes, 100u);
  log.delivered(taken);
  EXPECT_TRUE(log.empty());
  log.append("next");
  EXPECT_EQ(log.take().text, "next\n");  // no marker again
}

TEST(PendingLog, ADropDuringDeliveryOfUndeliveredBytesIsReported) {
  PendingLog log(40);
  log.append("0123456789");  // 11 bytes
  const auto taken = log.take();
  for (int i = 0; i < 8; ++i) log.append("abcdefghij");  // past the cap while in flight
  log.delivered(taken);
  const auto next = log.take();
  // Of the bytes cut meanwhile, the 11 delivered ones are not lost; the rest are.
  EXPECT_GT(next.dropped, 0);
  EXPECT_EQ(next.text.find("0123456789"), std::string::npos);
  EXPECT_NE(next.text.find("abcdefghij\n"), std::string::npos);
}

}  // namespace
}  // namespace jobctl::worker
