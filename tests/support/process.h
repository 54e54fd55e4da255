// Real processes for the tests: jobctld, jobctl-worker, jobctl-cloudsim, ... started through
// process/ (process::OutputCollector: their stdout and stderr collected on a thread from the
// start, so their pipes never fill), with a failure to start reported to GoogleTest, and the
// helpers the tests share around them.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "process/output_collector.h"
#include "process/run.h"

namespace jobctl::testing {

using jobctl::process::ExitStatus;
using namespace std::chrono_literals;

inline std::string env_or_fail(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    ADD_FAILURE() << name << " is not set (ctest sets it: see the test's CMakeLists.txt)";
    return "";
  }
  return v;
}

// A long-running child whose output is collected. The destructor kills its process group.
class Process {
 public:
  explicit Process(const std::vector<std::string>& argv, const process::SpawnOptions& options = {}) {
    auto c = process::OutputCollector::start(argv, options);
    if (!c) {
      ADD_FAILURE() << c.error().message;
      return;
    }
    collector_ = std::move(*c);
  }

  bool ok() const { return collector_ != nullptr; }
  pid_t pid() const { return collector_ ? collector_->pid() : -1; }
  // Every line it printed so far (stdout and stderr).
  std::string output() const { return collector_ ? collector_->output() : ""; }
  // True once a line contains `text`, waiting up to `timeout`.
  bool wait_for_output(const std::string& text, std::chrono::milliseconds timeout) const {
    return collector_ && collector_->wait_for_output(text, timeout);
  }
  // `sig` to its process group, up to `timeout` for it to end: its status; nullopt when it had to
  // be killed (SIGKILL) after that.
  std::optional<ExitStatus> stop(int sig, std::chrono::milliseconds timeout) {
    return collector_ ? collector_->stop(sig, timeout) : std::nullopt;
  }
  // Null when it did not start.
  const process::OutputCollector* collector() const { return collector_.get(); }

 private:
  std::unique_ptr<process::OutputCollector> collector_;
};

// Runs a short command to its end (a CLI call, a reference training), at most `timeout`; a
// command that cannot be started is a test failure (and an empty result).
inline process::RunResult run_to_end(const std::vector<std::string>& argv,
                                     std::chrono::milliseconds timeout = std::chrono::minutes(10)) {
  auto r = process::run(argv, {.timeout = timeout});
  if (!r) {
    ADD_FAILURE() << r.error().message;
    return process::RunResult{.status = ExitStatus{true, 127, 0, 0}};
  }
  return std::move(*r);
}

// The JSON start-up line jobctld and jobctl-cloudsim print ({"event":"listening","url":...}),
// once it appears in the output; null when it does not within the timeout.
inline nlohmann::json listening_line(const Process& p, std::chrono::milliseconds timeout) {
  if (!p.ok()) return nullptr;
  auto line = p.collector()->wait_for_line(
      [](std::string_view l) { return l.find("\"event\":\"listening\"") != std::string_view::npos; }, timeout);
  if (!line) return nullptr;
  nlohmann::json j = nlohmann::json::parse(line->text, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

}  // namespace jobctl::testing
