// The part of a job's log not yet delivered to jobctld: the runner's I/O loop appends the job's
// output lines, the heartbeat thread takes them and, once a heartbeat carrying them is answered,
// drops what it delivered. What piles up while the daemon cannot be reached is capped: past
// `cap` bytes the oldest half is dropped, and the next delivery starts with a marker saying how
// many bytes were lost.
//
// Thread safety: every method may be called from any thread (one mutex, never held while
// anything blocks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/mutex.h"

namespace jobctl::worker {

class PendingLog {
 public:
  explicit PendingLog(size_t cap) : cap_(cap) {}

  // Appends one line (a newline is added).
  void append(std::string_view line) JOBCTL_EXCLUDES(mu_);

  // What a heartbeat should carry now: the drop marker (when bytes were dropped) and the pending
  // text. Pass it back to delivered() once the heartbeat was answered.
  struct Taken {
    std::string text;
    size_t bytes = 0;       // of the pending text taken (without the marker)
    int64_t dropped = 0;    // the drop count the marker reported
  };
  Taken take() const JOBCTL_EXCLUDES(mu_);
  // Forgets what `taken` delivered; lines appended since stay (and a drop since then, of bytes
  // that were not delivered, is reported by the next marker).
  void delivered(const Taken& taken) JOBCTL_EXCLUDES(mu_);

  bool empty() const JOBCTL_EXCLUDES(mu_);

 private:
  const size_t cap_;
  mutable Mutex mu_;
  std::string text_ JOBCTL_GUARDED_BY(mu_);
  int64_t dropped_ JOBCTL_GUARDED_BY(mu_) = 0;  // bytes cut from the front since the last delivery
};

}  // namespace jobctl::worker
