// The housekeeping ticker (base/ticker.h): wake() runs its function before the period
// is up, a wake-up after a quiet spell runs at once, back-to-back wake-ups wait out the minimum
// gap and share one run, and stop() ends every wait. Periods and gaps
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

TEST(Ticker, AFirstWakeRunsAtOnceAndTheNextWaitsOutTheMinimumGap) {
  RunCounter c;
  Ticker t(1h, [&] { c.run(); }, 1h);
  t.wake();  // nothing ran before: no gap to wait for, although it is an hour
  EXPECT_TRUE(c.wait_for_runs(1));
  for (int i = 0; i < 100; ++i) t.wake();  // back-to-back: an hour after the first run
  t.stop();  // returns at once although a woken run is waiting for the gap
  EXPECT_EQ(c.count(), 1);
  t.wake();  // after stop: harmless
  EXPECT_EQ(c.count(), 1);
}

TEST(Ticker, AWakeDuringAWokenRunWaitsOutTheGapAfterIt) {
  // The run blocks until the test has woken the ticker again from outside: that wake-up comes
  // back to back with a woken run, so it must wait for the (hour-long) gap, not run a second time.
  RunCounter c;
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool woken_again = false;
  Ticker t(1h, [&] {
    c.run();
    std::unique_lock<std::mutex> lock(gate_mu);
    gate_cv.wait_for(lock, 10s, [&] { return woken_again; });
  }, 1h);
  t.wake();
  EXPECT_TRUE(c.wait_for_runs(1));
  t.wake();
  {
    std::lock_guard<std::mutex> lock(gate_mu);
    woken_again = true;
  }
  gate_cv.notify_all();
  t.stop();
  EXPECT_EQ(c.count(), 1);
}

}  // namespace
}  // namespace jobctl
