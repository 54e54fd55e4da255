#include "cloud/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace jobctl::cloud {

namespace {

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return "killed by signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : "");
  }
  return "ended with status " + std::to_string(status);
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(const char* const argv[], int out_fd, int err_fd, const char* cwd,
                             bool pdeathsig) {
  ::setpgid(0, 0);
  if (pdeathsig) ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // errors for KILL/STOP: fine
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, 0);
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  if (cwd != nullptr && cwd[0] != '\0' && ::chdir(cwd) != 0) ::_exit(126);
  ::execv("/bin/sh", const_cast<char* const*>(argv));
  ::_exit(127);
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string CommandResult::describe() const {
  if (timed_out) return "timed out";
  std::string s = signalled ? "killed by signal " + std::to_string(signal)
                            : "exit code " + std::to_string(exit_code);
  std::string e = err;
  while (!e.empty() && (e.back() == '\n' || e.back() == '\r')) e.pop_back();
  if (const size_t nl = e.rfind('\n'); nl != std::string::npos) e = e.substr(nl + 1);
  if (e.size() > 300) e = e.substr(0, 300) + "...";
  if (!e.empty()) s += ": " + e;
  return s;
}

Expected<CommandResult> run_shell(const std::string& command, int timeout_ms, size_t max_output) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return make_error(ErrorCode::io, std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return make_error(ErrorCode::io, std::string("pipe: ") + std::strerror(errno));
  }
  const char* argv[] = {"sh", "-c", command.c_str(), nullptr};
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    return make_error(ErrorCode::io, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) exec_child(argv, out_pipe[1], err_pipe[1], nullptr, true);
  ::setpgid(pid, pid);  // also in the parent: no race with kill(-pid) below
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  CommandResult r;
  const int64_t deadline = now_ms() + timeout_ms;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* bufs[2] = {&r.out, &r.err};
  int open_fds = 2;
  char chunk[8192];
  while (open_fds > 0) {
    const int64_t left = deadline - now_ms();
    if (left <= 0) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    const int n = ::poll(fds, 2, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = ::read(fds[i].fd, chunk, sizeof chunk);
      if (got > 0) {
        if (bufs[i]->size() < max_output)
          bufs[i]->append(chunk, std::min(static_cast<size_t>(got), max_output - bufs[i]->size()));
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    r.signalled = true;
    r.signal = WTERMSIG(status);
  }
  return r;
}

Expected<std::unique_ptr<DetachedProcess>> DetachedProcess::spawn(const std::string& command,
                                                                  const std::string& log_path,
                                                                  const std::string& cwd) {
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0)
    return make_error(ErrorCode::io, "cannot open " + log_path + ": " + std::strerror(errno));
  const std::string script = "exec " + command;
  const char* argv[] = {"sh", "-c", script.c_str(), nullptr};
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    return make_error(ErrorCode::io, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) exec_child(argv, log_fd, log_fd, cwd.c_str(), true);
  ::setpgid(pid, pid);
  ::close(log_fd);
  std::unique_ptr<DetachedProcess> p(new DetachedProcess());
  p->pid_ = pid;
  return p;
}

DetachedProcess::~DetachedProcess() { kill_and_reap(); }

bool DetachedProcess::signal_group(int sig) {
  if (reaped_ || pid_ <= 0) return false;
  return ::kill(-pid_, sig) == 0 || ::kill(pid_, sig) == 0;
}

bool DetachedProcess::running() {
  if (reaped_ || pid_ <= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    end_status_ = describe_wait_status(status);
    return false;
  }
  return r == 0;
}

void DetachedProcess::kill_and_reap() {
  if (reaped_ || pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {}
  reaped_ = true;
  end_status_ = describe_wait_status(status);
}

}  // namespace jobctl::cloud
