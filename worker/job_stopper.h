// Stopping a job's program (docs/job-protocol.md): SIGTERM to its process group, then SIGKILL
// once its grace (checkpoint.grace_s) has passed. Remembers why it was stopped — the first reason
// wins — and whether the worker itself killed it (so a SIGKILL is not blamed on the OOM killer).
//
// Thread safety: none; used from the runner's thread.
#pragma once

#include <chrono>

#include "process/child.h"

namespace jobctl::worker {

enum class StopReason {
  none,
  cancel,   // the job was cancelled
  lost,     // the lease was lost (the daemon gave the job to someone else)
  release,  // the worker is stopping: the job is given back
  move,     // jobctld moves the job: checkpoint, then give it back
};

class JobStopper {
 public:
  using Clock = std::chrono::steady_clock;

  JobStopper(process::Child& child, std::chrono::milliseconds grace) : child_(child), grace_(grace) {}

  StopReason reason() const { return reason_; }
  bool stopping() const { return reason_ != StopReason::none; }
  bool worker_killed_it() const { return killed_; }

  // SIGTERM now, SIGKILL after the grace.
  void stop(StopReason why);
  // SIGKILL when the grace has passed; true when it did (`now` injected by the caller's loop).
  bool kill_if_due(Clock::time_point now);
  // Milliseconds until the SIGKILL (at most `cap`); `cap` when none is armed.
  int ms_until_kill(int cap) const;
  // The time the program has left to end by itself once its pipes closed: what is left of an
  // armed grace, else a whole grace.
  std::chrono::milliseconds time_to_exit() const;
  // SIGKILL now (it did not end in time).
  void kill();

 private:
  process::Child& child_;
  const std::chrono::milliseconds grace_;
  StopReason reason_ = StopReason::none;
  Clock::time_point kill_at_ = Clock::time_point::max();  // max: not armed
  bool killed_ = false;
};

}  // namespace jobctl::worker
