#include "worker/stop_source.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace jobctl::worker {

namespace {

std::atomic<StopSource*> g_installed{nullptr};

void on_signal(int) {
  if (StopSource* s = g_installed.load()) s->request();
}

}  // namespace

StopSource::StopSource() {
  if (::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) pipe_[0] = pipe_[1] = -1;
}

StopSource::~StopSource() {
  StopSource* self = this;
  g_installed.compare_exchange_strong(self, nullptr);
  for (int fd : pipe_)
    if (fd >= 0) ::close(fd);
}

void StopSource::request() {
  flag_.store(true);
  if (pipe_[1] >= 0) {
    const char c = 1;
    (void)!::write(pipe_[1], &c, 1);  // async-signal-safe; a full pipe is fine (already readable)
  }
}

void StopSource::request(const char* reason) {
  if (!flag_.load()) {
    const char* none = nullptr;
    reason_.compare_exchange_strong(none, reason);
  }
  request();
}

bool StopSource::wait_for(std::chrono::milliseconds delay) const {
  const auto deadline = std::chrono::steady_clock::now() + delay;
  while (!requested()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return true;
    pollfd p{pipe_[0], POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 60'000)));  // EINTR: loop again
  }
  return false;
}

void StopSource::install_signal_handlers() {
  g_installed.store(this);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

}  // namespace jobctl::worker
