// A child process: how jobctl-worker runs jobctl-train, the cloud drivers run their commands,
// jobctl-cloudsim runs its instances' workers, and the tests run jobctld, workers and cloudsim.
// Standard library and POSIX only (train/'s tests use it where train/ builds alone).
//
// What spawn() gives the child
//   - its own process group (the child is the leader; signal_group() reaches it and whatever it
//     started that stayed in the group, so a timeout or a kill leaves nothing behind);
//   - SIGTERM when the thread that spawned it ends (PR_SET_PDEATHSIG; Linux sends it when that
//     thread exits, not only the whole process), so a killed parent leaves no orphan running:
//     spawn from a thread that outlives the child;
//   - default dispositions for every signal and an empty signal mask (a parent that blocks or
//     ignores SIGTERM, SIGPIPE, ... does not pass that on);
//   - stdin from /dev/null; stdout and stderr each to a pipe this object reads, to this
//     process's own stream, to /dev/null, or appended to a file (SpawnOptions);
//   - descriptors 0, 1 and 2 and nothing else: every descriptor this module opens is
//     close-on-exec, and the child closes any other one it inherited (close_range) before exec,
//     so a socket of another thread never leaks into it;
//   - the working directory `cwd` (empty: this process's) and this process's environment with
//     `env`'s NAME=value entries set or replaced and its bare NAME entries removed (a bare
//     program name is looked up in this process's PATH);
//   - RLIMIT_AS (soft and hard) of `address_space_limit_bytes` when not 0, so a program that
//     allocates beyond it gets an allocation failure instead of taking the machine's memory;
//   - with `new_session`, a session of its own instead of only a process group (a sweep by
//     session then finds what it started that left the group but not the session);
//   - with `cgroup_procs_fd`, membership of that cgroup v2 (it writes itself into the open
//     cgroup.procs before anything else it does), so everything it starts is in it too;
//   - with `run_as`, that user's uid, gid and supplementary groups (set after the cgroup, before
//     exec; needs root or CAP_SETUID/CAP_SETGID, else spawn() fails with permission_denied).
// fork() is followed at once by exec with only async-signal-safe calls between (everything the
// child needs is prepared before the fork), so spawning from a multi-threaded program is safe.
// A program that cannot be run (missing, not executable, a cwd that does not exist) is an error
// of spawn(), reported from the child through a close-on-exec pipe, not a child exiting 127.
//
// Ownership: a Child owns its process and the read ends of its pipes. Destroying a Child whose
// process has not been reaped kills its process group (SIGKILL) and reaps it; a reaped child's
// group is left alone (something it started in the background is not this object's to kill).
//
// Thread safety: one thread at a time, with one exception: one thread may read the pipes
// (stdout_fd, stderr_fd, close_stdout, close_stderr) while another signals and waits (signal,
// signal_group, try_wait, wait, wait_for, terminate, kill); the two halves share no state. pid() is
// safe from any thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/expected.h"

namespace jobctl::process {

// How a child ended.
struct ExitStatus {
  bool exited = false;  // true: exited with `code`; false: killed by `signal`
  int code = 0;
  int signal = 0;
  int64_t max_rss_kb = 0;  // the child's peak resident memory (wait4's rusage), KiB; 0: unknown
  bool success() const { return exited && code == 0; }
  // The shell's number for it: the exit code, or 128 + the signal.
  int shell_code() const { return exited ? code : 128 + signal; }
  std::string describe() const;  // "exit code 3", "killed by signal 9 (Killed)"
  static ExitStatus from_wait_status(int wait_status);
};

// Where one of the child's output streams goes.
struct Output {
  enum class Kind { pipe, inherit, discard, append_to_file };
  Kind kind = Kind::pipe;
  std::string path{};  // append_to_file: created (0644) when missing

  static Output pipe() { return {Kind::pipe, {}}; }         // read through stdout_fd()/stderr_fd()
  static Output inherit() { return {Kind::inherit, {}}; }   // this process's own stream
  static Output discard() { return {Kind::discard, {}}; }   // /dev/null
  static Output append_to(std::string file) { return {Kind::append_to_file, std::move(file)}; }
};

// A Unix identity for the child (process/user_credentials.h looks one up by user name).
struct Credentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups{};  // supplementary groups
};

// Members default-initialised with {} so that designated initialisers may name only some.
struct SpawnOptions {
  std::string cwd{};               // empty: this process's working directory
  std::vector<std::string> env{};  // "NAME=value": set or replaced in the child's environment; "NAME": removed
  uint64_t address_space_limit_bytes = 0;  // RLIMIT_AS of the child; 0: unchanged
  Output stdout_to = Output::pipe();
  Output stderr_to = Output::pipe();
  bool new_session = false;                // setsid() instead of setpgid(0, 0)
  int cgroup_procs_fd = -1;                // an open cgroup.procs (cgroup v2) the child joins; -1: none
  std::optional<Credentials> run_as{};     // the child's uid/gid/groups; nullopt: this process's
};

// The argv that runs `command` through the shell: {"/bin/sh", "-c", command}.
std::vector<std::string> shell_argv(const std::string& command);

class Child {
 public:
  // Starts argv[0] (a path, or a name looked up in PATH) with argv as its arguments. Errors:
  // invalid_argument (empty argv), not_found (no such program or cwd, or not executable), io.
  static Expected<std::unique_ptr<Child>> spawn(const std::vector<std::string>& argv,
                                                const SpawnOptions& options = {});
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }

  // The read ends of the child's stdout and stderr pipes; -1 when that stream is not a pipe or
  // once closed. Reading them is the caller's (poll them together with other descriptors).
  int stdout_fd() const { return out_fd_; }
  int stderr_fd() const { return err_fd_; }
  void close_stdout();
  void close_stderr();

  // Sends `sig` to the child alone / to its whole process group. False once it has been reaped
  // (its pid may belong to another process by then) or when kill() fails.
  bool signal(int sig);
  bool signal_group(int sig);

  // The exit status once the child has ended (reaping it), else nullopt. Never blocks.
  std::optional<ExitStatus> try_wait();
  // Blocks until the child ends.
  ExitStatus wait();
  // Waits up to `timeout` for the child to end; nullopt if it still runs.
  std::optional<ExitStatus> wait_for(std::chrono::milliseconds timeout);
  // The polite stop: `sig` to the group, up to `grace` for the child to end, then SIGKILL to the
  // group; returns how it ended. The caller must keep reading pipes it holds open meanwhile
  // (or close them) so that a child writing its last words does not block on a full pipe.
  ExitStatus terminate(int sig, std::chrono::milliseconds grace);
  // SIGKILL to the group, then wait: how it ended (at once if it already had).
  ExitStatus kill();

  // Reads the piped streams into `out` and `err` until both have ended (true) or `deadline`
  // has passed (false). Each string keeps at most `max_bytes` more; the rest is read and
  // dropped, so a chatty child neither blocks nor fills memory.
  bool read_output(std::string& out, std::string& err,
                   std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt,
                   size_t max_bytes = SIZE_MAX);
  // read_output() to the ends, then wait(): for short commands.
  ExitStatus read_all(std::string& out, std::string& err);

 private:
  Child() = default;
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::optional<ExitStatus> status_;
};

}  // namespace jobctl::process
