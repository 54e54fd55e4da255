// Calls a function every `period` on its own thread until stopped: the daemon's housekeeping
// loop (long-poll deadlines now; lease expiry and placement later).
//
// Ownership and thread safety: owns its thread; stop() (also run by the destructor) joins it and
// may be called from any thread but the ticker's own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace jobctl::daemon::service {

class Ticker {
 public:
  Ticker(std::chrono::milliseconds period, std::function<void()> fn)
      : period_(period), fn_(std::move(fn)), thread_([this] { loop(); }) {}
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

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, period_, [this] { return stopping_; })) {
      lock.unlock();
      fn_();
      lock.lock();
    }
  }

  std::chrono::milliseconds period_;
  std::function<void()> fn_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace jobctl::daemon::service
