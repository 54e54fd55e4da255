// Calls a function every `period` on its own thread until stopped: the daemon's housekeeping
// loops (long-poll deadlines, lease expiry, placement). wake() asks for a run before the period
// is up — placement uses it so a submitted job is placed at once rather than at the next tick.
// A wake-up after a quiet spell runs at once; only back-to-back wake-ups are spaced: a woken run
// comes no sooner than `min_gap` after the end of the previous woken run, so a burst of
// wake-ups (thousands of submits a second) becomes one run per gap that takes them all. The
// periodic runs do not count towards the gap: a wake-up just after one still runs at once (the
// gap bounds how often wake-ups can run the function, which the period already bounds for
// itself).
//
// Ownership and thread safety: owns its thread; stop() (also run by the destructor) joins it and
// may be called from any thread but the ticker's own; wake() from any thread, the ticker's own
// included.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <thread>

#include "base/mutex.h"

namespace jobctl {

class Ticker {
 public:
  Ticker(std::chrono::milliseconds period, std::function<void()> fn,
         std::chrono::milliseconds min_gap = std::chrono::milliseconds(0))
      : period_(period), min_gap_(min_gap), fn_(std::move(fn)), thread_([this] { loop(); }) {}
  ~Ticker() { stop(); }
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

  void stop() JOBCTL_EXCLUDES(mu_) {
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    cv_.signal_all();
    if (thread_.joinable()) thread_.join();
  }

  void wake() JOBCTL_EXCLUDES(mu_) {
    {
      MutexLock lock(mu_);
      if (woken_) return;
      woken_ = true;
    }
    cv_.signal_all();
  }

 private:
  void loop() JOBCTL_EXCLUDES(mu_) {
    using clock = std::chrono::steady_clock;
    mu_.lock();
    auto last_run = clock::now();
    // The end of the last woken run; none yet, so the first wake-up runs at once.
    std::optional<clock::time_point> last_woken_run;
    for (;;) {
      // Until the period is up, or a wake-up or a stop comes.
      while (!stopping_ && !woken_ && cv_.wait_until(mu_, last_run + period_)) {
      }
      // A wake-up waits out the minimum gap since the last woken run (a stop does not).
      while (!stopping_ && woken_ && last_woken_run && cv_.wait_until(mu_, *last_woken_run + min_gap_)) {
      }
      if (stopping_) break;
      const bool woken = woken_;
      woken_ = false;
      mu_.unlock();
      fn_();
      mu_.lock();
      last_run = clock::now();
      if (woken) last_woken_run = last_run;
    }
    mu_.unlock();
  }

  std::chrono::milliseconds period_;
  std::chrono::milliseconds min_gap_;
  std::function<void()> fn_;
  Mutex mu_;
  CondVar cv_;
  bool stopping_ JOBCTL_GUARDED_BY(mu_) = false;
  bool woken_ JOBCTL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace jobctl
