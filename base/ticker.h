// Calls a function every `period` on its own thread until stopped: the daemon's housekeeping
// loops (long-poll deadlines, lease expiry, placement). wake() asks for a run before the period
// is up — placement uses it so a submitted job is placed at once rather than at the next tick —
// but never sooner than `min_gap` after the previous run, so a burst of wake-ups (thousands of
// submits a second) becomes one run per gap that takes them all.
//
// Ownership and thread safety: owns its thread; stop() (also run by the destructor) joins it and
// may be called from any thread but the ticker's own; wake() from any thread, the ticker's own
// included.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace jobctl {

class Ticker {
 public:
  Ticker(std::chrono::milliseconds period, std::function<void()> fn,
         std::chrono::milliseconds min_gap = std::chrono::milliseconds(0))
      : period_(period), min_gap_(min_gap), fn_(std::move(fn)), thread_([this] { loop(); }) {}
  ~Ticker() { stop(); }
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void wake() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (woken_) return;
      woken_ = true;
    }
    cv_.notify_all();
  }

 private:
  void loop() {
    using clock = std::chrono::steady_clock;
    std::unique_lock<std::mutex> lock(mu_);
    auto last_run = clock::now();
    for (;;) {
      cv_.wait_until(lock, last_run + period_, [this] { return stopping_ || woken_; });
      if (stopping_) return;
      if (woken_ && cv_.wait_until(lock, last_run + min_gap_, [this] { return stopping_; })) return;
      woken_ = false;
      lock.unlock();
      fn_();
      lock.lock();
      last_run = clock::now();
    }
  }

  std::chrono::milliseconds period_;
  std::chrono::milliseconds min_gap_;
  std::function<void()> fn_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool woken_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace jobctl
