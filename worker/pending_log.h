// The part of a job's log not yet delivered to jobctld: the runner's I/O loop appends the job's
// output lines, each stamped with the time it was read, the heartbeat thread takes them and, once
// a heartbeat carrying them is answered, drops what it delivered. What piles up while the daemon
// cannot be reached is capped: past `cap` bytes (the text and the JSON each line travels in) the
// oldest half is dropped, and the next delivery starts with a line saying how many bytes of text
// were lost (stamped with the time of the first line after them).
//
// Thread safety: every method may be called from any thread (one mutex, never held while
// anything blocks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/mutex.h"
#include "protocol/worker_messages.h"

namespace jobctl::worker {

class PendingLog {
 public:
  // `clock` stamps the lines; not owned, must outlive this.
  PendingLog(size_t cap, const Clock& clock) : cap_(cap), clock_(clock) {}

  // Appends one line (without its newline), stamped now.
  void append(std::string_view line) JOBCTL_EXCLUDES(mu_);

  // What a heartbeat should carry now: the drop line (when bytes were dropped) and the pending
  // lines. Pass it back to delivered() once the heartbeat was answered.
  struct Taken {
    std::vector<protocol::OutputLine> lines;
    int64_t end = 0;        // where the taken lines end, in bytes ever appended
    int64_t dropped = 0;    // the bytes the drop line reported (0: none)
  };
  Taken take() const JOBCTL_EXCLUDES(mu_);
  // Forgets what `taken` delivered; lines appended since stay (and a drop since then, of lines
  // that were not delivered, is reported by the next drop line).
  void delivered(const Taken& taken) JOBCTL_EXCLUDES(mu_);

  bool empty() const JOBCTL_EXCLUDES(mu_);

 private:
  const size_t cap_;
  const Clock& clock_;
  mutable Mutex mu_;
  // Each pending line with where it ends, counted in bytes ever appended (its text and a newline).
  struct Pending {
    protocol::OutputLine line;
    int64_t end = 0;
  };
  std::deque<Pending> lines_ JOBCTL_GUARDED_BY(mu_);
  int64_t appended_ JOBCTL_GUARDED_BY(mu_) = 0;   // bytes ever appended
  int64_t delivered_ JOBCTL_GUARDED_BY(mu_) = 0;  // bytes delivered (or reported dropped)
  int64_t pending_ JOBCTL_GUARDED_BY(mu_) = 0;    // bytes of lines_
  // Lines between delivered_ and the first pending line were dropped: the gap is what is lost.
  int64_t front() const JOBCTL_REQUIRES(mu_) { return lines_.empty() ? appended_ : lines_.front().end - line_bytes(lines_.front()); }
  static int64_t line_bytes(const Pending& p) { return static_cast<int64_t>(p.line.text.size()) + 1; }
};

}  // namespace jobctl::worker
