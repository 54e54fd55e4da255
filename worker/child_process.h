// A child process with its standard output and error on pipes: how the worker runs jobctl-train
// (and nvidia-smi). The child gets its own process group, an unblocked signal mask, default
// signal dispositions and stdin from /dev/null; on Linux it also receives SIGTERM if the worker
// dies (PR_SET_PDEATHSIG), so a killed worker leaves no trainer behind.
//
// Ownership and thread safety: a ChildProcess owns its pipes and reaps its process; destroying
// one whose process still runs kills it (SIGKILL) and reaps it. Use from one thread.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"

namespace jobctl::worker {

struct ExitStatus {
  bool exited = false;   // true: exited with `code`; false: killed by `signal`
  int code = 0;
  int signal = 0;
  bool success() const { return exited && code == 0; }
  std::string describe() const;  // "exit code 3", "killed by signal 9 (Killed)"
};

class ChildProcess {
 public:
  // argv[0] is the program: a path, or a name looked up in PATH. `cwd` empty: the worker's own.
  // Errors: code "not_found" when the program cannot be executed, "io" otherwise.
  // `env`: "NAME=value" entries set (or replaced) in the child's environment, e.g.
  // CUDA_VISIBLE_DEVICES for the GPU slot a job runs on.
  static Expected<std::unique_ptr<ChildProcess>> spawn(const std::vector<std::string>& argv,
                                                       const std::string& cwd = "",
                                                       const std::vector<std::string>& env = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Read ends of the child's stdout and stderr (-1 once closed by close_stdout/close_stderr).
  int stdout_fd() const { return out_fd_; }
  int stderr_fd() const { return err_fd_; }
  void close_stdout();
  void close_stderr();

  // Sends a signal to the child (not to its group). False if it has already been reaped.
  bool send_signal(int sig);
  // The exit status if the child has ended (reaping it), else nullopt. Never blocks.
  std::optional<ExitStatus> try_wait();
  // Blocks until the child ends.
  ExitStatus wait();
  // Reads stdout and stderr to their ends and waits: for short commands such as nvidia-smi.
  ExitStatus read_all(std::string& out, std::string& err);

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::optional<ExitStatus> status_;
};

// Splits a byte stream into lines ('\n'; a trailing '\r' is dropped). Lines longer than
// max_line are cut there (the rest of that line is dropped), so a runaway child cannot make the
// worker's memory grow without bound.
class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line = 1 << 20) : max_line_(max_line) {}
  std::vector<std::string> feed(std::string_view data);
  // What is left after the stream ended (a last line without '\n'), if anything.
  std::optional<std::string> finish();

 private:
  size_t max_line_;
  std::string partial_;
  bool dropping_ = false;
};

}  // namespace jobctl::worker
