#include "process/child.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <thread>

extern char** environ;

namespace jobctl::process {

namespace {

using SteadyClock = std::chrono::steady_clock;

// What the child reports through the close-on-exec pipe when it cannot exec.
struct SpawnFailure {
  enum Stage : int { chdir_failed = 1, exec_failed = 2, cgroup_failed = 3, credentials_failed = 4 };
  int stage = 0;
  int error = 0;
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

Error os_error(const std::string& what) {
  return make_error(ErrorCode::io, what + ": " + std::strerror(errno));
}

// A descriptor numbered 3 or above: the child moves its descriptors onto 0, 1 and 2 one after
// another, which must not overwrite a source still to be moved (a parent started with 0, 1 or 2
// closed gets those numbers back from open() and pipe()).
int above_stdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return moved;
}

// The parent's environment with `overrides` ("NAME=value") set or replaced; a bare "NAME"
// removes NAME.
std::vector<std::string> child_environment(const std::vector<std::string>& overrides) {
  auto name_of = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const bool replaced = std::any_of(overrides.begin(), overrides.end(),
                                      [&](const std::string& o) { return name_of(o) == name_of(entry); });
    if (!replaced) out.emplace_back(entry);
  }
  for (const auto& o : overrides)
    if (o.find('=') != std::string::npos) out.push_back(o);
  return out;
}

// The highest descriptor number the fallback of close_other_descriptors() visits.
int descriptor_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return 1 << 16;
  return static_cast<int>(std::min<rlim_t>(r.rlim_cur, 1 << 16));
}

// In the child: closes every descriptor from 3 up but `keep`. Async-signal-safe.
void close_other_descriptors(int keep, int limit) {
#ifdef SYS_close_range
  const bool below = keep <= 3 || ::syscall(SYS_close_range, 3u, static_cast<unsigned>(keep - 1), 0u) == 0;
  if (below && ::syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u) == 0) return;
#endif
  for (int fd = 3; fd < limit; ++fd)
    if (fd != keep) ::close(fd);
}

// In the child: makes `fd` the descriptor `target`, open across exec. Async-signal-safe.
void install(int fd, int target) {
  if (fd < 0) return;
  if (fd == target) {
    ::fcntl(fd, F_SETFD, 0);
  } else {
    ::dup2(fd, target);  // the copy is not close-on-exec; `fd` itself is, or is closed below
  }
}

// Everything the child needs, prepared before fork().
struct ChildPlan {
  std::vector<char*> argv;
  std::vector<char*> envp;
  const char* cwd = nullptr;
  int stdin_fd = -1;
  int stdout_fd = -1;  // -1: inherit
  int stderr_fd = -1;
  int report_fd = -1;
  int descriptor_limit = 0;
  pid_t parent = 0;
  uint64_t address_space_limit = 0;  // 0: none
  bool new_session = false;
  int cgroup_procs_fd = -1;
  const Credentials* run_as = nullptr;
};

[[noreturn]] void run_child(const ChildPlan& plan) {
  if (plan.new_session) ::setsid();
  else ::setpgid(0, 0);
#ifdef __linux__
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != plan.parent) ::_exit(127);  // the parent died before prctl took effect
#endif
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // KILL, STOP: EINVAL, fine
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  install(plan.stdin_fd, 0);
  install(plan.stdout_fd, 1);
  install(plan.stderr_fd, 2);
  SpawnFailure failure;
  if (plan.address_space_limit > 0) {
    rlimit as{static_cast<rlim_t>(plan.address_space_limit), static_cast<rlim_t>(plan.address_space_limit)};
    (void)::setrlimit(RLIMIT_AS, &as);  // best effort: a lower hard limit already set stays
  }
  // The cgroup first (joining one may need this process's own rights), then the identity, then
  // the folder (which must be the new identity's to enter).
  if (plan.cgroup_procs_fd >= 0 && ::write(plan.cgroup_procs_fd, "0", 1) != 1) {
    failure = {SpawnFailure::cgroup_failed, errno};
  } else if (plan.run_as != nullptr &&
             (::setgroups(plan.run_as->groups.size(), plan.run_as->groups.data()) != 0 ||
              ::setgid(plan.run_as->gid) != 0 || ::setuid(plan.run_as->uid) != 0)) {
    failure = {SpawnFailure::credentials_failed, errno};
  } else if (plan.cwd != nullptr && ::chdir(plan.cwd) != 0) {
    failure = {SpawnFailure::chdir_failed, errno};
  } else {
    close_other_descriptors(plan.report_fd, plan.descriptor_limit);
    ::execvpe(plan.argv[0], plan.argv.data(), plan.envp.data());
    failure = {SpawnFailure::exec_failed, errno};
  }
  (void)!::write(plan.report_fd, &failure, sizeof failure);
  ::_exit(127);
}

// The descriptors a spawn opens; closes what is still open when it goes out of scope.
struct SpawnDescriptors {
  int null_in = -1;
  int out_read = -1, out_write = -1;
  int err_read = -1, err_write = -1;
  int report_read = -1, report_write = -1;
  ~SpawnDescriptors() {
    for (int* fd : {&null_in, &out_read, &out_write, &err_read, &err_write, &report_read, &report_write})
      close_fd(*fd);
  }
};

// Opens the child's end for `output` into `write_end` (and the parent's into `read_end` for a
// pipe). `shared_file`: the other stream's descriptor when it appends to the same file.
Status open_output(const Output& output, int& read_end, int& write_end, int shared_file) {
  switch (output.kind) {
    case Output::Kind::inherit:
      return {};
    case Output::Kind::discard:
      write_end = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (write_end < 0) return os_error("cannot open /dev/null");
      break;
    case Output::Kind::append_to_file:
      write_end = shared_file >= 0 ? ::fcntl(shared_file, F_DUPFD_CLOEXEC, 3)
                                   : ::open(output.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (write_end < 0) return os_error("cannot open " + output.path);
      break;
    case Output::Kind::pipe: {
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) return os_error("pipe");
      read_end = fds[0];
      write_end = fds[1];
      break;
    }
  }
  write_end = above_stdio(write_end);
  if (write_end < 0) return os_error("fcntl");
  return {};
}

}  // namespace

std::vector<std::string> shell_argv(const std::string& command) { return {"/bin/sh", "-c", command}; }

std::string ExitStatus::describe() const {
  if (exited) return "exit code " + std::to_string(code);
  const char* name = ::strsignal(signal);
  return "killed by signal " + std::to_string(signal) + (name ? std::string(" (") + name + ")" : "");
}

ExitStatus ExitStatus::from_wait_status(int wait_status) {
  ExitStatus s;
  if (WIFEXITED(wait_status)) {
    s.exited = true;
    s.code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    s.signal = WTERMSIG(wait_status);
  }
  return s;
}

Expected<std::unique_ptr<Child>> Child::spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty() || argv[0].empty()) return make_error(ErrorCode::invalid_argument, "no program to run");
  ChildPlan plan;
  for (const auto& a : argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  std::vector<std::string> env = child_environment(options.env);
  for (auto& e : env) plan.envp.push_back(e.data());
  plan.envp.push_back(nullptr);
  plan.cwd = options.cwd.empty() ? nullptr : options.cwd.c_str();
  plan.descriptor_limit = descriptor_limit();
  plan.parent = ::getpid();
  plan.address_space_limit = options.address_space_limit_bytes;
  plan.new_session = options.new_session;
  plan.cgroup_procs_fd = options.cgroup_procs_fd;
  plan.run_as = options.run_as ? &*options.run_as : nullptr;

  SpawnDescriptors fds;
  fds.null_in = above_stdio(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (fds.null_in < 0) return os_error("cannot open /dev/null");
  if (auto st = open_output(options.stdout_to, fds.out_read, fds.out_write, -1); !st) return st.error();
  const bool same_file = options.stdout_to.kind == Output::Kind::append_to_file &&
                         options.stderr_to.kind == Output::Kind::append_to_file &&
                         options.stdout_to.path == options.stderr_to.path;
  if (auto st = open_output(options.stderr_to, fds.err_read, fds.err_write, same_file ? fds.out_write : -1); !st)
    return st.error();
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return os_error("pipe");
  fds.report_read = report[0];
  fds.report_write = above_stdio(report[1]);
  if (fds.report_write < 0) return os_error("fcntl");
  plan.stdin_fd = fds.null_in;
  plan.stdout_fd = fds.out_write;
  plan.stderr_fd = fds.err_write;
  plan.report_fd = fds.report_write;

  const pid_t pid = ::fork();
  if (pid < 0) return os_error("fork");
  if (pid == 0) run_child(plan);
  // Also in the parent, so that signal_group() right after spawn reaches it (a session leader
  // is one already, and a group leader could no longer call setsid()).
  if (!options.new_session) ::setpgid(pid, pid);
  for (int* fd : {&fds.null_in, &fds.out_write, &fds.err_write, &fds.report_write}) close_fd(*fd);

  // The report pipe ends (EOF) at the exec; a record on it means the child could not get there.
  SpawnFailure failure;
  ssize_t n;
  do {
    n = ::read(fds.report_read, &failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof failure)) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const ErrorCode code = failure.error == ENOENT || failure.error == EACCES || failure.error == ENOTDIR
                               ? ErrorCode::not_found
                               : ErrorCode::io;
    if (failure.stage == SpawnFailure::cgroup_failed)
      return make_error(ErrorCode::io, "cannot run " + argv[0] + ": cannot join its cgroup: " + std::strerror(failure.error));
    if (failure.stage == SpawnFailure::credentials_failed)
      return make_error(ErrorCode::permission_denied,
                        "cannot run " + argv[0] + " as uid " + std::to_string(options.run_as->uid) + ": " +
                            std::strerror(failure.error));
    if (failure.stage == SpawnFailure::chdir_failed)
      return make_error(code, "cannot run " + argv[0] + " in " + options.cwd + ": " + std::strerror(failure.error));
    return make_error(code, "cannot run " + argv[0] + ": " + std::strerror(failure.error));
  }
  std::unique_ptr<Child> child(new Child());
  child->pid_ = pid;
  child->out_fd_ = std::exchange(fds.out_read, -1);
  child->err_fd_ = std::exchange(fds.err_read, -1);
  return child;
}

Child::~Child() {
  if (!status_ && pid_ > 0) kill();
  close_fd(out_fd_);
  close_fd(err_fd_);
}

void Child::close_stdout() { close_fd(out_fd_); }
void Child::close_stderr() { close_fd(err_fd_); }

bool Child::signal(int sig) {
  if (status_ || pid_ <= 0) return false;
  return ::kill(pid_, sig) == 0;
}

bool Child::signal_group(int sig) {
  if (status_ || pid_ <= 0) return false;
  // The child may have left its group (setsid): then it alone.
  return ::kill(-pid_, sig) == 0 || ::kill(pid_, sig) == 0;
}

std::optional<ExitStatus> Child::try_wait() {
  if (status_ || pid_ <= 0) return status_;
  int status = 0;
  struct rusage usage {};
  if (::wait4(pid_, &status, WNOHANG, &usage) == pid_) {
    status_ = ExitStatus::from_wait_status(status);
    status_->max_rss_kb = usage.ru_maxrss;
  }
  return status_;
}

ExitStatus Child::wait() {
  if (status_) return *status_;
  int status = 0;
  struct rusage usage {};
  pid_t r;
  do {
    r = ::wait4(pid_, &status, 0, &usage);
  } while (r < 0 && errno == EINTR);
  // r < 0 (ECHILD): reaped elsewhere, e.g. SIGCHLD ignored; the status is lost.
  status_ = r == pid_ ? ExitStatus::from_wait_status(status) : ExitStatus{true, 127, 0, 0};
  if (r == pid_) status_->max_rss_kb = usage.ru_maxrss;
  return *status_;
}

std::optional<ExitStatus> Child::wait_for(std::chrono::milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    if (auto st = try_wait()) return st;
    const auto now = SteadyClock::now();
    if (now >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::min<SteadyClock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

ExitStatus Child::terminate(int sig, std::chrono::milliseconds grace) {
  if (status_) return *status_;
  signal_group(sig);
  if (auto st = wait_for(grace)) return *st;
  return kill();
}

ExitStatus Child::kill() {
  signal_group(SIGKILL);
  return wait();
}

bool Child::read_output(std::string& out, std::string& err,
                        std::optional<std::chrono::steady_clock::time_point> deadline, size_t max_bytes) {
  const size_t out_limit = out.size() + std::min(max_bytes, out.max_size() - out.size());
  const size_t err_limit = err.size() + std::min(max_bytes, err.max_size() - err.size());
  char buf[8192];
  while (out_fd_ >= 0 || err_fd_ >= 0) {
    int timeout_ms = -1;
    if (deadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - SteadyClock::now()).count();
      if (left <= 0) return false;
      timeout_ms = static_cast<int>(std::min<int64_t>(left, 60'000));
    }
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    const int n = ::poll(fds, 2, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      std::string& into = i == 0 ? out : err;
      const size_t limit = i == 0 ? out_limit : err_limit;
      if (got > 0) {
        if (into.size() < limit) into.append(buf, std::min(static_cast<size_t>(got), limit - into.size()));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        close_fd(i == 0 ? out_fd_ : err_fd_);
      }
    }
  }
  return true;
}

ExitStatus Child::read_all(std::string& out, std::string& err) {
  (void)read_output(out, err);
  return wait();
}

}  // namespace jobctl::process
