// Child processes of the cloud side: short shell commands whose output is read (the exec
// driver's launch/terminate/describe commands), and long-running processes with their output in
// a log file (jobctl-cloudsim's instances, each a jobctl-worker).
//
// Every child runs `/bin/sh -c COMMAND` in its own process group, with default signal
// dispositions, an empty signal mask and stdin from /dev/null, so a timeout or a reclaim can kill
// the whole group (a worker and the trainer it started). Fork is followed at once by exec, with
// only async-signal-safe calls between, so spawning from a multi-threaded program is safe.
//
// Ownership and thread safety: a DetachedProcess owns its child; destroying it while the child
// runs kills the group (SIGKILL) and reaps it. Use one from one thread at a time. run_shell() is
// safe from any thread.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "base/expected.h"

namespace jobctl::cloud {

struct CommandResult {
  int exit_code = -1;       // valid when !signalled
  bool signalled = false;   // killed by a signal (the timeout's SIGKILL included)
  int signal = 0;
  bool timed_out = false;
  std::string out;          // stdout (at most max_output bytes)
  std::string err;          // stderr (at most max_output bytes)
  bool success() const { return !signalled && !timed_out && exit_code == 0; }
  // "exit code 3: <last line of stderr>" / "timed out after 30 s" / "killed by signal 9".
  std::string describe() const;
};

// Runs `/bin/sh -c command`, waits up to timeout_ms (then kills its process group). Errors: io
// when the process cannot be started; a command that runs and fails is a result, not an error.
Expected<CommandResult> run_shell(const std::string& command, int timeout_ms,
                                  size_t max_output = 4 << 20);

class DetachedProcess {
 public:
  // Starts `/bin/sh -c "exec COMMAND"` in `cwd` (created by the caller), stdout and stderr
  // appended to log_path. The child gets SIGTERM if this process dies (PR_SET_PDEATHSIG).
  static Expected<std::unique_ptr<DetachedProcess>> spawn(const std::string& command,
                                                          const std::string& log_path,
                                                          const std::string& cwd);
  ~DetachedProcess();
  DetachedProcess(const DetachedProcess&) = delete;
  DetachedProcess& operator=(const DetachedProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Sends `sig` to the whole process group. False when the child was already reaped.
  bool signal_group(int sig);
  // True while the child runs; reaps it (without blocking) once it has ended.
  bool running();
  // Kills the group with SIGKILL and reaps the child.
  void kill_and_reap();
  // How the child ended ("exit code 0", "killed by signal 9"), empty while it runs.
  const std::string& end_status() const { return end_status_; }

 private:
  DetachedProcess() = default;
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string end_status_;
};

}  // namespace jobctl::cloud
