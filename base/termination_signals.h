// How the servers (jobctld, jobctl-cloudsim) take SIGTERM and SIGINT: blocked in every thread and
// received synchronously by main() with wait_for_termination_signal(), so shutdown runs as
// ordinary code in a known thread, never inside a signal handler.
//
// Thread safety: call block_termination_signals() in main() before any thread starts (threads
// inherit the mask); wait_for_termination_signal() from that one thread.
#pragma once

#include <pthread.h>
#include <signal.h>

namespace jobctl {

// Blocks SIGTERM and SIGINT in the calling thread and ignores SIGPIPE (a peer that closes a
// socket mid-write is an error value from write(), not a dead process). Returns the blocked set.
inline sigset_t block_termination_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

// Waits for SIGTERM or SIGINT (blocked by block_termination_signals()) and names it.
inline const char* wait_for_termination_signal(const sigset_t& signals) {
  int sig = 0;
  sigwait(&signals, &sig);
  return sig == SIGINT ? "SIGINT" : "SIGTERM";
}

}  // namespace jobctl
