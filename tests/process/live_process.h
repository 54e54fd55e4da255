// Whether a process still runs, for the tests that check a kill reached a whole process group.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "tests/support/poll.h"

namespace jobctl::process::testing {

// True while `pid` is a live process: neither gone nor a zombie nobody has reaped yet (a killed
// grandchild is reparented, and in a container nobody may reap it).
inline bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  const size_t close = text.rfind(')');  // the state follows the command name in parentheses
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

// Waits up to 10 s (killing and reparenting take a moment) for `pid` to be gone.
inline bool gone_soon(pid_t pid) {
  using namespace std::chrono_literals;
  return jobctl::testing::poll_until([&] { return !alive(pid); }, 10s, 10ms);
}

}  // namespace jobctl::process::testing
