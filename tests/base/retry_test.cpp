// base/retry.h with injected randomness and waits: the pauses are checked without sleeping.
#include "base/retry.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <vector>

namespace jobctl {
namespace {

using namespace std::chrono_literals;
using Ms = std::chrono::milliseconds;

// Random numbers from a list, in turn.
UniformRandom sequence(std::vector<double> values) {
  auto i = std::make_shared<size_t>(0);
  return [values, i] { return values[(*i)++ % values.size()]; };
}

// A wait that records the pauses; it is interrupted at the pause numbered `interrupt_at` (1-based).
struct RecordingWait {
  std::vector<Ms> pauses;
  int interrupt_at = 0;
  RetryWait wait() {
    return [this](Ms d) {
      pauses.push_back(d);
      return interrupt_at == 0 || static_cast<int>(pauses.size()) < interrupt_at;
    };
  }
};

TEST(Backoff, DoublesUpToTheCapAndStartsAgainAfterAReset) {
  Backoff b({.max_attempts = 0, .first_delay = 250ms, .max_delay = 2000ms, .multiplier = 2, .jitter = 0},
            sequence({0.7}));
  std::vector<Ms> got;
  for (int i = 0; i < 6; ++i) got.push_back(b.next_delay());
  EXPECT_EQ(got, (std::vector<Ms>{250ms, 500ms, 1000ms, 2000ms, 2000ms, 2000ms}));
  EXPECT_EQ(b.failures(), 6);
  b.reset();
  EXPECT_EQ(b.next_delay(), 250ms);
}

TEST(Backoff, JitterShortensEachPauseByUpToItsShare) {
  // jitter 0.5: a random 0 keeps the pause whole, 0.5 takes a quarter off, 0.999 almost half.
  Backoff b({.first_delay = 1000ms, .max_delay = 60s, .jitter = 0.5}, sequence({0.0, 0.5, 0.999}));
  EXPECT_EQ(b.next_delay(), 1000ms);
  EXPECT_EQ(b.next_delay(), 1500ms);  // 2000 * (1 - 0.25)
  EXPECT_EQ(b.next_delay(), 2002ms);  // 4000 * (1 - 0.4995)
  // Full jitter (1.0) can shorten a pause to nothing, never lengthen one.
  Backoff full({.first_delay = 800ms, .jitter = 1.0}, sequence({0.25}));
  EXPECT_EQ(full.next_delay(), 600ms);
}

TEST(Backoff, NeverOverflowsHoweverLongItRetries) {
  Backoff b({.first_delay = 1s, .max_delay = 30s, .jitter = 0}, sequence({0}));
  Ms last{};
  for (int i = 0; i < 10000; ++i) last = b.next_delay();
  EXPECT_EQ(last, 30s);
}

TEST(Retry, StopsAtTheFirstSuccess) {
  RecordingWait w;
  int calls = 0;
  auto r = retry({.max_attempts = 5, .first_delay = 100ms, .jitter = 0}, w.wait(),
                 [&] { return ++calls == 3 ? std::optional<int>(42) : std::nullopt; },
                 [](const std::optional<int>& v) { return !v; }, sequence({0}));
  EXPECT_EQ(r.result, 42);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(w.pauses, (std::vector<Ms>{100ms, 200ms}));
}

TEST(Retry, GivesUpAfterMaxAttemptsWithTheLastResult) {
  RecordingWait w;
  int calls = 0;
  std::vector<int> logged;
  auto r = retry({.max_attempts = 4, .first_delay = 10ms, .jitter = 0}, w.wait(), [&] { return -(++calls); },
                 [](int v) { return v < 0; }, [&](int v, int attempt, Ms) { logged.push_back(attempt * 100 - v); },
                 sequence({0}));
  EXPECT_EQ(r.result, -4);
  EXPECT_EQ(r.attempts, 4);
  EXPECT_EQ(w.pauses.size(), 3u);  // no pause after the last attempt
  EXPECT_EQ(logged, (std::vector<int>{101, 202, 303}));
}

TEST(Retry, AFailureNotWorthRetryingEndsItAtOnce) {
  RecordingWait w;
  auto r = retry({}, w.wait(), [] { return 409; }, [](int status) { return status >= 500; });
  EXPECT_EQ(r.result, 409);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_TRUE(w.pauses.empty());
}

TEST(Retry, AnInterruptedWaitEndsItWithTheLastResult) {
  RecordingWait w;
  w.interrupt_at = 2;  // the program is stopping during the second pause
  int calls = 0;
  auto r = retry({.max_attempts = 0, .first_delay = 1s, .max_delay = 30s}, w.wait(), [&] { return ++calls; },
                 [](int) { return true; });
  EXPECT_EQ(r.result, 2);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(w.pauses.size(), 2u);
}

}  // namespace
}  // namespace jobctl
