// A request to stop, observable three ways: a flag (libcurl transfers check it and abort), a
// file descriptor that becomes readable (poll() loops wake at once), and requested(). The worker
// routes its SIGTERM and SIGINT to one; tests make their own.
//
// Thread safety: request() is async-signal-safe and may be called from any thread; the rest are
// safe from any thread. The source must outlive everything that watches it.
#pragma once

#include <atomic>
#include <chrono>

namespace jobctl::worker {

class StopSource {
 public:
  StopSource();
  ~StopSource();
  StopSource(const StopSource&) = delete;
  StopSource& operator=(const StopSource&) = delete;

  void request();
  // A stop for a named reason (e.g. a spot interruption notice); the first reason given wins.
  // Not async-signal-safe: from threads only. `reason` must be a string literal (not copied).
  void request(const char* reason);
  // Why the stop was requested: the reason given, or "SIGTERM" (signals and plain request()).
  const char* reason() const {
    const char* r = reason_.load();
    return r != nullptr ? r : "SIGTERM";
  }
  bool requested() const { return flag_.load(); }
  // Sleeps up to `delay`, returning early when a stop is requested (at once if it already was):
  // true when the whole delay passed without one. A jobctl::RetryWait (base/retry.h) for the
  // worker's retries that a stop ends.
  bool wait_for(std::chrono::milliseconds delay) const;
  // Readable once a stop is requested (never drained).
  int fd() const { return pipe_[0]; }
  const std::atomic<bool>& flag() const { return flag_; }

  // Makes SIGTERM and SIGINT call request() on this source (and ignores SIGPIPE). One source per
  // process may be installed.
  void install_signal_handlers();

 private:
  std::atomic<bool> flag_{false};
  std::atomic<const char*> reason_{nullptr};
  int pipe_[2] = {-1, -1};
};

}  // namespace jobctl::worker
