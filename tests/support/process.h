// Real processes for end-to-end tests: a child (jobctld, jobctl-worker, jobctl-cloudsim, ...)
// whose stdout and stderr are collected on a thread from the start (so its pipes never fill), and
// the helpers the tests share around it.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "worker/child_process.h"

namespace jobctl::testing {

using jobctl::worker::ChildProcess;
using jobctl::worker::ExitStatus;
using namespace std::chrono_literals;

inline std::string env_or_fail(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    ADD_FAILURE() << name << " is not set (ctest sets it: see the test's CMakeLists.txt)";
    return "";
  }
  return v;
}

// A long-running process whose stdout and stderr are collected on a thread (so its pipes never
// fill). The destructor kills it.
class Process {
 public:
  explicit Process(const std::vector<std::string>& argv) {
    auto c = ChildProcess::spawn(argv);
    if (!c) {
      ADD_FAILURE() << c.error().message;
      return;
    }
    child_ = std::move(*c);
    drain_ = std::thread([this] { drain(); });
  }
  ~Process() { stop(SIGKILL, 5s); }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  bool ok() const { return child_ != nullptr; }
  pid_t pid() const { return child_ ? child_->pid() : -1; }

  // Waits until the collected output contains `text` (true) or the timeout passes (false).
  bool wait_for_output(const std::string& text, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (output().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(20ms);
    }
    return output().find(text) != std::string::npos;
  }

  // Sends `sig` and waits up to `timeout` for the exit; SIGKILL after that (nullopt then).
  std::optional<ExitStatus> stop(int sig, std::chrono::seconds timeout) {
    if (!child_) return std::nullopt;
    std::optional<ExitStatus> st;
    {
      std::lock_guard<std::mutex> lock(wait_mu_);
      st = status_;
    }
    if (!st) {
      std::lock_guard<std::mutex> lock(wait_mu_);
      st = child_->try_wait();
      if (!st) {
        child_->send_signal(sig);
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!(st = child_->try_wait()) && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(20ms);
        if (!st) {
          child_->send_signal(SIGKILL);
          child_->wait();
          st.reset();
        }
      }
      status_ = st;
    }
    if (drain_.joinable()) drain_.join();
    return st;
  }

  std::string output() {
    std::lock_guard<std::mutex> lock(mu_);
    return output_;
  }

 private:
  void drain() {
    char buf[4096];
    while (child_->stdout_fd() >= 0 || child_->stderr_fd() >= 0) {
      pollfd fds[2] = {{child_->stdout_fd(), POLLIN, 0}, {child_->stderr_fd(), POLLIN, 0}};
      if (::poll(fds, 2, 200) < 0) break;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
        if (n > 0) {
          std::lock_guard<std::mutex> lock(mu_);
          output_.append(buf, static_cast<size_t>(n));
        } else {
          i == 0 ? child_->close_stdout() : child_->close_stderr();
        }
      }
    }
  }

  std::unique_ptr<ChildProcess> child_;
  std::thread drain_;
  std::mutex mu_;
  std::string output_;
  std::mutex wait_mu_;
  std::optional<ExitStatus> status_;
};

// The JSON start-up line jobctld and jobctl-cloudsim print ({"event":"listening","url":...}),
// once it appears in the output; null when it does not within the timeout.
inline nlohmann::json listening_line(Process& p, std::chrono::milliseconds timeout) {
  if (!p.wait_for_output("\"event\":\"listening\"", timeout)) return nullptr;
  const std::string out = p.output();
  const size_t at = out.find("\"event\":\"listening\"");
  const size_t nl = out.rfind('\n', at);
  const size_t b = nl == std::string::npos ? 0 : nl + 1;
  const size_t e = out.find('\n', at);
  nlohmann::json j = nlohmann::json::parse(out.substr(b, e == std::string::npos ? std::string::npos : e - b), nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

}  // namespace jobctl::testing
