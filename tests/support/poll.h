// Waiting in a test for what another thread or process does: ask a condition again and again
// until it holds, or give up after a bound. The bound is a safety net against a hang, never a
// speed assertion: on a loaded 2-core machine things take many times their usual time, so give
// every wait room (the default is a minute), and let the test's own checks say what went wrong.
//
//   ASSERT_TRUE(poll_until([&] { return svc.waiting_workers() == 1; })) << "no worker waited";
//
// Thread safety: calls `done` on the caller's thread only.
#pragma once

#include <chrono>
#include <thread>

namespace jobctl::testing {

// Calls `done` every `interval` until it returns true (then true) or until `limit` has passed
// (then false, after one last call at or past the limit).
template <class Condition>
bool poll_until(Condition&& done, std::chrono::milliseconds limit = std::chrono::seconds(60),
                std::chrono::milliseconds interval = std::chrono::milliseconds(50)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const bool past = std::chrono::steady_clock::now() >= deadline;
    if (done()) return true;
    if (past) return false;
    std::this_thread::sleep_for(interval);
  }
}

}  // namespace jobctl::testing
