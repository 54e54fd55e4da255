// Runs a command to its end: the cloud exec driver's launch/terminate/describe commands, the
// worker's nvidia-smi, the CLI runs and the reference trainings of the tests. The command is a
// Child (process/child.h: its own process group, stdin from /dev/null, nothing inherited but
// stdio); its stdout and stderr are captured, each up to a limit.
//
// A timeout kills the whole process group (SIGKILL), so a hung command and everything it started
// is gone when run() returns; the output read until then is kept. A command that runs and fails
// is a RunResult, not an error: errors are only for a command that could not be started.
//
// Thread safety: run() may be called from any thread, several at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "base/expected.h"
#include "process/child.h"

namespace jobctl::process {

struct RunOptions {
  std::string cwd{};                         // as SpawnOptions
  std::vector<std::string> env{};            // as SpawnOptions
  std::chrono::milliseconds timeout{0};      // 0: wait as long as it takes
  size_t max_output = size_t{4} << 20;       // bytes kept of stdout and of stderr each
};

struct RunResult {
  ExitStatus status{};
  bool timed_out = false;  // killed (with its group) when the timeout passed
  std::string out{};       // stdout, at most max_output bytes
  std::string err{};       // stderr, at most max_output bytes
  bool success() const { return !timed_out && status.success(); }
  // "timed out" or the exit status, with the last line of stderr when there is one: "exit
  // code 3: no such instance", "killed by signal 9 (Killed)".
  std::string describe() const;
};

// Runs argv (argv[0] a path or a name looked up in PATH). Errors: as Child::spawn.
Expected<RunResult> run(const std::vector<std::string>& argv, const RunOptions& options = {});

}  // namespace jobctl::process
