#include "worker/job_stopper.h"

#include <signal.h>

#include <algorithm>

namespace jobctl::worker {

void JobStopper::stop(StopReason why) {
  if (reason_ == StopReason::none) reason_ = why;
  child_.signal_group(SIGTERM);
  kill_at_ = Clock::now() + grace_;
}

bool JobStopper::kill_if_due(Clock::time_point now) {
  if (kill_at_ == Clock::time_point::max() || now < kill_at_) return false;
  kill();
  return true;
}

void JobStopper::kill() {
  killed_ = true;
  child_.signal_group(SIGKILL);
  kill_at_ = Clock::time_point::max();
}

int JobStopper::ms_until_kill(int cap) const {
  if (kill_at_ == Clock::time_point::max()) return cap;
  const auto d = std::chrono::duration_cast<std::chrono::milliseconds>(kill_at_ - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(d, 0, cap));
}

std::chrono::milliseconds JobStopper::time_to_exit() const {
  if (kill_at_ == Clock::time_point::max()) return grace_;
  return std::chrono::milliseconds(ms_until_kill(static_cast<int>(grace_.count())));
}

}  // namespace jobctl::worker
