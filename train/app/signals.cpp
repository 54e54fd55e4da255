#include "train/app/signals.h"

#include <atomic>
#include <csignal>

namespace jobctl::train {

namespace {

// Lock-free atomics are async-signal-safe; the static_asserts make sure these are.
std::atomic<int> g_checkpoint_requests{0};
std::atomic<bool> g_stop{false};
static_assert(std::atomic<int>::is_always_lock_free);
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_signal(int sig) {
  if (sig == SIGUSR1) {
    g_checkpoint_requests.fetch_add(1, std::memory_order_relaxed);
  } else {
    g_stop.store(true, std::memory_order_relaxed);
  }
}

}  // namespace

namespace {

sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

void hold_signals() {
  const sigset_t set = handled_signals();
  sigprocmask(SIG_BLOCK, &set, nullptr);
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  // Signals held since start-up (hold_signals) are delivered to the handlers now.
  const sigset_t set = handled_signals();
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

bool SignalControl::take_checkpoint_request() {
  return g_checkpoint_requests.exchange(0, std::memory_order_relaxed) > 0;
}

bool SignalControl::stop_requested() { return g_stop.load(std::memory_order_relaxed); }

}  // namespace jobctl::train
