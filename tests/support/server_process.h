// A server the tests run as a real process (jobctld, jobctl-cloudsim): started, and found by the
// JSON start-up line it prints ({"event":"listening","url":...,"port":...}). url() is empty when
// it did not start within the timeout (a test failure, with its output).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"

namespace jobctl::testing {

class ServerProcess {
 public:
  explicit ServerProcess(const std::vector<std::string>& argv,
                         std::chrono::milliseconds start_timeout = std::chrono::seconds(60))
      : process_(argv) {
    if (!process_.ok()) return;
    const nlohmann::json j = listening_line(process_, start_timeout);
    if (j.is_null()) {
      ADD_FAILURE() << argv.front() << " did not start:\n" << process_.output();
      return;
    }
    url_ = j.value("url", "");
    port_ = j.value("port", 0);
  }
  bool ok() const { return !url_.empty(); }
  const std::string& url() const { return url_; }
  int port() const { return port_; }
  pid_t pid() const { return process_.pid(); }
  Process& process() { return process_; }

 private:
  Process process_;
  std::string url_;
  int port_ = 0;
};

}  // namespace jobctl::testing
