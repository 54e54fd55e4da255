// Time as an injected dependency.
//
// Code that needs "now" takes a Clock&, never reads the wall clock itself, so that the scheduler,
// lease expiry and the simulator can be tested on a ManualClock in memory and without sleeping.
//
// Two readings: now_ms() is the wall clock (UTC), for what people read and for deadlines stored
// across restarts; steady_ms() never jumps (CLOCK_MONOTONIC), for how long something took or has
// been silent. An NTP step, a VM restore or a manual change moves the first, never the second.
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
  // Milliseconds on a clock that only moves forward, at the rate of time (any origin): compare
  // two readings of it, never one with a wall-clock time.
  virtual int64_t steady_ms() const = 0;
  double now_seconds() const { return static_cast<double>(now_ms()) / 1000.0; }
};

class SystemClock final : public Clock {
 public:
  int64_t now_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  int64_t steady_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that moves only when told to. Time passing (advance_*, set_ms forward) moves both
// readings; jump_wall_ms moves the wall clock alone, as a step of the system clock does.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'700'000'000'000) : now_(start_ms), steady_(0) {}
  int64_t now_ms() const override { return now_.load(); }
  int64_t steady_ms() const override { return steady_.load(); }
  void set_ms(int64_t t) {
    const int64_t before = now_.exchange(t);
    if (t > before) steady_.fetch_add(t - before);
  }
  void advance_ms(int64_t d) {
    now_.fetch_add(d);
    if (d > 0) steady_.fetch_add(d);
  }
  void advance_seconds(double s) { advance_ms(static_cast<int64_t>(s * 1000.0)); }
  void jump_wall_ms(int64_t d) { now_.fetch_add(d); }

 private:
  std::atomic<int64_t> now_;
  std::atomic<int64_t> steady_;
};

}  // namespace jobctl
