// A child whose stdout and stderr are read from its start on a thread of their own, line by
// line, each line kept with the time it arrived: the jobctld, jobctl-worker and jobctl-cloudsim
// processes of the end-to-end tests, the processes of the recovery benchmark. Its pipes never
// fill, so the child never blocks on its output; the lines stay in memory (each at most 1 MiB,
// LineSplitter) for the collector's life, so it is for children whose output is not endless.
//
// Ownership: owns the Child (process/child.h: its own process group, stdin from /dev/null) and
// the reader thread. Destroying it kills the child's group (SIGKILL) if the child still runs,
// and joins the reader.
//
// Thread safety: every member may be called from any thread, concurrently.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/expected.h"
#include "base/mutex.h"
#include "process/child.h"

namespace jobctl::process {

struct OutputLine {
  std::chrono::steady_clock::time_point at;  // when the reader saw the line end
  bool from_stderr = false;
  std::string text;  // without its '\n'
};

class OutputCollector {
 public:
  // Spawns argv with `options` (its stdout_to and stderr_to are replaced by pipes) and starts
  // reading. Errors: as Child::spawn.
  static Expected<std::unique_ptr<OutputCollector>> start(const std::vector<std::string>& argv,
                                                          SpawnOptions options = {});
  ~OutputCollector();
  OutputCollector(const OutputCollector&) = delete;
  OutputCollector& operator=(const OutputCollector&) = delete;

  pid_t pid() const { return child_->pid(); }

  // Every line so far, each ending in '\n', stdout's and stderr's interleaved as they arrived
  // (a line is never cut by a line of the other stream).
  std::string output() const;
  std::vector<OutputLine> lines() const;
  // The first line so far for which `match` is true, waiting up to `timeout` for one to arrive;
  // nullopt when none did (or the output ended without one).
  std::optional<OutputLine> wait_for_line(const std::function<bool(std::string_view)>& match,
                                          std::chrono::milliseconds timeout) const;
  // True once a line contains `text`, waiting up to `timeout`.
  bool wait_for_output(std::string_view text, std::chrono::milliseconds timeout) const;

  // As Child::signal and Child::signal_group.
  bool signal(int sig);
  bool signal_group(int sig);
  // The exit status once the child has ended, else nullopt. Never blocks.
  std::optional<ExitStatus> try_wait();
  // Sends `sig` to the child's group and waits up to `grace` for the child to end: its status.
  // If it does not end in time it is killed (SIGKILL to the group) and the answer is nullopt.
  // Either way the output has been read to its end when stop() returns.
  std::optional<ExitStatus> stop(int sig, std::chrono::milliseconds grace);
  // Waits for the child to end and its output to be read to the end.
  ExitStatus wait();

 private:
  explicit OutputCollector(std::unique_ptr<Child> child);
  void read_until_end();
  // After the child ended: lets the reader reach the end of the output, then joins it.
  void finish_reading();

  std::unique_ptr<Child> child_;
  Mutex process_mu_;  // the process half of child_ (signal, wait); the reader thread owns its pipes
  mutable Mutex lines_mu_;
  mutable CondVar lines_changed_;
  std::vector<OutputLine> lines_ JOBCTL_GUARDED_BY(lines_mu_);
  bool ended_ JOBCTL_GUARDED_BY(lines_mu_) = false;  // the reader has finished
  std::atomic<bool> quit_{false};  // the reader gives up on pipes something else still holds open
  std::thread reader_;
  std::once_flag joined_;
};

}  // namespace jobctl::process
