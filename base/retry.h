// Retrying an operation that fails for a while (a daemon restarting, a network blip): exponential
// backoff with jitter, the pauses spent in an injected wait that a stopping program interrupts.
//
// The pause after the n-th failure is d = min(first_delay * multiplier^(n-1), max_delay), less a
// random share of up to `jitter` of it: with jitter 0.5 a pause of 4 s is drawn from (2 s, 4 s],
// so that workers that failed together (at a daemon restart) do not all come back together, and
// no pause is ever longer than the policy says. The random numbers and the wait are injected, so
// tests check the pauses without sleeping; the worker's wait returns early when it is stopping
// (worker/stop_source.h), which ends the retry at once with the last attempt's result.
//
// Thread safety: Backoff is a value (one thread at a time); retry() keeps no state between calls.
// default_random() draws from a generator of the calling thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <thread>
#include <type_traits>
#include <utility>

namespace jobctl {

struct RetryPolicy {
  int max_attempts = 5;                         // attempts in all; 0: no limit
  std::chrono::milliseconds first_delay{250};   // the pause after the first failure
  std::chrono::milliseconds max_delay{8000};    // no pause is longer
  double multiplier = 2.0;                      // each pause this much longer than the last
  double jitter = 0.5;                          // in [0, 1]: the share a pause may be shortened by
};

// A uniform random number in [0, 1).
using UniformRandom = std::function<double()>;
// Waits `delay`; false when interrupted (the program is stopping): the retry ends then.
using RetryWait = std::function<bool(std::chrono::milliseconds delay)>;

// std::mt19937_64, one per thread, seeded from std::random_device.
inline UniformRandom default_random() {
  return [] {
    thread_local std::mt19937_64 engine{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
  };
}

// Sleeps the whole delay; never interrupted.
inline bool sleep_wait(std::chrono::milliseconds delay) {
  std::this_thread::sleep_for(delay);
  return true;
}

// The pauses of one retry sequence: each call to next_delay() is the pause after one more
// failure. For loops that retry in their own way (the worker's lease polling); retry() below
// uses one.
class Backoff {
 public:
  explicit Backoff(RetryPolicy policy, UniformRandom random = default_random())
      : policy_(policy), random_(std::move(random)) {}

  std::chrono::milliseconds next_delay() {
    const double first = static_cast<double>(std::max<int64_t>(0, policy_.first_delay.count()));
    const double cap = static_cast<double>(std::max<int64_t>(0, policy_.max_delay.count()));
    // multiplier^failures, stopping once past the cap (no overflow however long it retries).
    double nominal = first;
    for (int i = 0; i < failures_ && nominal < cap; ++i) nominal *= std::max(1.0, policy_.multiplier);
    nominal = std::min(nominal, cap);
    ++failures_;
    const double jitter = std::clamp(policy_.jitter, 0.0, 1.0);
    const double u = std::clamp(random_(), 0.0, 1.0);
    return std::chrono::milliseconds(static_cast<int64_t>(std::llround(nominal * (1.0 - jitter * u))));
  }
  // After a success: the next failure starts again from first_delay.
  void reset() { failures_ = 0; }
  int failures() const { return failures_; }

 private:
  RetryPolicy policy_;
  UniformRandom random_;
  int failures_ = 0;
};

// What retry() ends with.
template <class Result>
struct Retried {
  Result result;             // the last attempt's
  int attempts = 0;          // how many were made
  bool interrupted = false;  // the wait was interrupted (more attempts were allowed)
};

// Calls attempt() until its result is not worth_retrying(result) (a success, or a failure that
// another attempt cannot mend), policy.max_attempts have been made, or the wait is interrupted.
// Before each pause, on_retry(result, attempts so far, pause) (to log it).
template <class Attempt, class WorthRetrying, class OnRetry>
  requires std::is_invocable_v<OnRetry&, const std::invoke_result_t<Attempt&>&, int, std::chrono::milliseconds>
auto retry(const RetryPolicy& policy, const RetryWait& wait, Attempt&& attempt, WorthRetrying&& worth_retrying,
           OnRetry&& on_retry, UniformRandom random = default_random())
    -> Retried<std::invoke_result_t<Attempt&>> {
  Backoff backoff(policy, std::move(random));
  for (int made = 1;; ++made) {
    auto result = attempt();
    if (!worth_retrying(std::as_const(result)) || (policy.max_attempts > 0 && made >= policy.max_attempts))
      return {std::move(result), made, false};
    const auto pause = backoff.next_delay();
    on_retry(std::as_const(result), made, pause);
    if (!wait(pause)) return {std::move(result), made, true};
  }
}

template <class Attempt, class WorthRetrying>
auto retry(const RetryPolicy& policy, const RetryWait& wait, Attempt&& attempt, WorthRetrying&& worth_retrying,
           UniformRandom random = default_random()) -> Retried<std::invoke_result_t<Attempt&>> {
  return retry(policy, wait, std::forward<Attempt>(attempt), std::forward<WorthRetrying>(worth_retrying),
               [](const auto&, int, std::chrono::milliseconds) {}, std::move(random));
}

}  // namespace jobctl
