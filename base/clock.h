// Time as an injected dependency.
//
// Code that needs "now" takes a Clock&, never reads the wall clock itself, so that the scheduler,
// lease expiry and the simulator can be tested on a ManualClock in memory and without sleeping.
//
// Thread safety: SystemClock is stateless and safe from any thread. ManualClock is safe from any
// thread (an atomic); tests advance it explicitly.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace jobctl {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch (UTC).
  virtual int64_t now_ms() const = 0;
  double now_seconds() const { return static_cast<double>(now_ms()) / 1000.0; }
};

class SystemClock final : public Clock {
 public:
  int64_t now_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that moves only when told to.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'700'000'000'000) : now_(start_ms) {}
  int64_t now_ms() const override { return now_.load(); }
  void set_ms(int64_t t) { now_.store(t); }
  void advance_ms(int64_t d) { now_.fetch_add(d); }
  void advance_seconds(double s) { now_.fetch_add(static_cast<int64_t>(s * 1000.0)); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace jobctl
