// The housekeeping ticker (base/ticker.h): wake() runs its function before the period
// is up, wake-ups inside the minimum gap wait for it, and stop() ends every wait. Periods and gaps
// are an hour, so any run these tests see can only come from wake(); waits for a run are bounded
// (10 s) only to turn a bug into a failure instead of a hang.
#include "base/ticker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace jobctl {
namespace {

using namespace std::chrono_literals;

// Counts runs and lets a test wait for a count.
struct RunCounter {
  std::mutex mu;
  std::condition_variable cv;
  int runs = 0;
  void run() {
    std::lock_guard<std::mutex> lock(mu);
    ++runs;
    cv.notify_all();
  }
  bool wait_for_runs(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, 10s, [&] { return runs >= n; });
  }
  int count() {
    std::lock_guard<std::mutex> lock(mu);
    return runs;
  }
};

TEST(Ticker, WakeRunsTheFunctionBeforeThePeriodIsUp) {
  RunCounter c;
  Ticker t(1h, [&] { c.run(); });
  EXPECT_EQ(c.count(), 0);
  t.wake();
  EXPECT_TRUE(c.wait_for_runs(1));
  t.wake();
  EXPECT_TRUE(c.wait_for_runs(2));
  t.stop();
  EXPECT_EQ(c.count(), 2);
}

TEST(Ticker, AWakeFromInsideTheFunctionRunsItAgain) {
  RunCounter c;
  Ticker* self = nullptr;
  std::mutex self_mu;
  Ticker t(1h, [&] {
    c.run();
    std::lock_guard<std::mutex> lock(self_mu);
    if (c.count() < 3 && self) self->wake();
  });
  {
    std::lock_guard<std::mutex> lock(self_mu);
    self = &t;
  }
  t.wake();
  EXPECT_TRUE(c.wait_for_runs(3));
  t.stop();
}

TEST(Ticker, WakeUpsInsideTheMinimumGapWaitAndStopEndsTheWait) {
  RunCounter c;
  Ticker t(1h, [&] { c.run(); }, 1h);
  for (int i = 0; i < 100; ++i) t.wake();
  t.stop();  // returns at once although a woken run is waiting for the gap
  EXPECT_EQ(c.count(), 0);
  t.wake();  // after stop: harmless
  EXPECT_EQ(c.count(), 0);
}

}  // namespace
}  // namespace jobctl
