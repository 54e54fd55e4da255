#include "worker/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>

namespace jobctl::worker {

namespace {

ExitStatus from_wait_status(int status) {
  ExitStatus s;
  if (WIFEXITED(status)) {
    s.exited = true;
    s.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
  }
  return s;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::string ExitStatus::describe() const {
  if (exited) return "exit code " + std::to_string(code);
  const char* name = ::strsignal(signal);
  return "killed by signal " + std::to_string(signal) + (name ? std::string(" (") + name + ")" : "");
}

Expected<std::unique_ptr<ChildProcess>> ChildProcess::spawn(const std::vector<std::string>& argv,
                                                            const std::string& cwd,
                                                            const std::vector<std::string>& env) {
  if (argv.empty()) return make_error(ErrorCode::invalid_argument, "no program to run");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The child's environment, built before fork (nothing may allocate between fork and exec).
  std::vector<std::string> env_strings;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& o : env)
      if (std::string_view(o).substr(0, o.find('=')) == name) replaced = true;
    if (!replaced) env_strings.emplace_back(entry);
  }
  for (const auto& o : env) env_strings.push_back(o);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  int out[2], err[2], report[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return make_error(ErrorCode::io, std::string("pipe: ") + ::strerror(errno));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]); ::close(out[1]);
    return make_error(ErrorCode::io, std::string("pipe: ") + ::strerror(errno));
  }
  if (::pipe2(report, O_CLOEXEC) != 0) {
    ::close(out[0]); ::close(out[1]); ::close(err[0]); ::close(err[1]);
    return make_error(ErrorCode::io, std::string("pipe: ") + ::strerror(errno));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {out[0], out[1], err[0], err[1], report[0], report[1]}) ::close(fd);
    return make_error(ErrorCode::io, std::string("fork: ") + ::strerror(errno));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls from here to exec.
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // the worker died before prctl took effect
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGUSR1}) ::signal(sig, SIG_DFL);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      const int e = errno;
      (void)!::write(report[1], &e, sizeof e);
      ::_exit(127);
    }
    ::execvpe(args[0], args.data(), envp.data());
    const int e = errno;
    (void)!::write(report[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  ::close(report[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(report[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(out[0]);
    ::close(err[0]);
    return make_error(child_errno == ENOENT || child_errno == EACCES ? ErrorCode::not_found : ErrorCode::io,
                      "cannot run " + argv[0] + ": " + ::strerror(child_errno));
  }
  auto child = std::unique_ptr<ChildProcess>(new ChildProcess());
  child->pid_ = pid;
  child->out_fd_ = out[0];
  child->err_fd_ = err[0];
  return child;
}

ChildProcess::~ChildProcess() {
  if (!status_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    wait();
  }
  close_fd(out_fd_);
  close_fd(err_fd_);
}

void ChildProcess::close_stdout() { close_fd(out_fd_); }
void ChildProcess::close_stderr() { close_fd(err_fd_); }

bool ChildProcess::send_signal(int sig) {
  if (status_ || pid_ <= 0) return false;
  return ::kill(pid_, sig) == 0;
}

std::optional<ExitStatus> ChildProcess::try_wait() {
  if (status_) return status_;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) status_ = from_wait_status(status);
  return status_;
}

ExitStatus ChildProcess::wait() {
  if (status_) return *status_;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  status_ = r == pid_ ? from_wait_status(status) : ExitStatus{true, 127, 0};
  return *status_;
}

ExitStatus ChildProcess::read_all(std::string& out, std::string& err) {
  char buf[4096];
  while (out_fd_ >= 0 || err_fd_ >= 0) {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? out : err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close_fd(i == 0 ? out_fd_ : err_fd_);
      }
    }
  }
  return wait();
}

std::vector<std::string> LineSplitter::feed(std::string_view data) {
  std::vector<std::string> lines;
  while (!data.empty()) {
    const size_t nl = data.find('\n');
    std::string_view piece = data.substr(0, nl);
    if (!dropping_) {
      const size_t room = max_line_ - std::min(max_line_, partial_.size());
      partial_.append(piece.substr(0, room));
      if (piece.size() > room) dropping_ = true;
    }
    if (nl == std::string_view::npos) break;
    if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
    lines.push_back(std::move(partial_));
    partial_.clear();
    dropping_ = false;
    data.remove_prefix(nl + 1);
  }
  return lines;
}

std::optional<std::string> LineSplitter::finish() {
  if (partial_.empty()) return std::nullopt;
  std::string rest = std::move(partial_);
  partial_.clear();
  dropping_ = false;
  return rest;
}

}  // namespace jobctl::worker
