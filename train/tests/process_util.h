// Runs jobctl-train as a real child process (process/child.h): its stdout (JSON lines) comes
// back line by line, signals can be sent, the exit status is collected. Its stderr goes to the
// test's own. For the integration tests.
#pragma once

#include <signal.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "process/child.h"
#include "process/line_reader.h"
#include "train/spec/json.h"

namespace jobctl::train::testing {

inline std::string train_binary() {
  const char* p = std::getenv("JOBCTL_TRAIN_BIN");
  return p ? p : "";
}

class TrainProcess {
 public:
  // `env`: "NAME=value" set or replaced, bare "NAME" removed from the test's own environment.
  explicit TrainProcess(const std::vector<std::string>& args, std::vector<std::string> env = {}) {
    std::vector<std::string> argv = {train_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto c = process::Child::spawn(argv, {.env = std::move(env),
                                          .stdout_to = process::Output::pipe(),
                                          .stderr_to = process::Output::inherit()});
    if (!c) {
      start_error_ = c.error().message;
      return;
    }
    child_ = std::move(*c);
    reader_.emplace(child_->stdout_fd());
  }

  // Why the process could not be started (empty when it was).
  const std::string& start_error() const { return start_error_; }

  // The next JSON line, or nullopt at end of output.
  std::optional<json::Value> next() {
    if (!reader_) return std::nullopt;
    auto text = reader_->next();
    if (!text) return std::nullopt;
    lines_.push_back(*text);
    auto v = json::parse(*text);
    if (!v) return json::Value(json::Object{{"event", json::Value("unparsable")}, {"text", json::Value(*text)}});
    return *v;
  }
  // Reads everything that is left.
  std::vector<json::Value> rest() {
    std::vector<json::Value> all;
    while (auto v = next()) all.push_back(*v);
    return all;
  }
  void signal(int sig) {
    if (child_) child_->signal(sig);
  }
  // Exit code (or 128 + signal); 127 when it could not be started.
  int wait() { return child_ ? child_->wait().shell_code() : 127; }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  std::unique_ptr<process::Child> child_;  // destroyed while running: killed
  std::optional<process::LineReader> reader_;
  std::string start_error_;
  std::vector<std::string> lines_;
};

inline std::string event_of(const json::Value& v) {
  const json::Value* e = v.find("event");
  return e && e->is_string() ? e->as_string() : "";
}

inline void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace jobctl::train::testing
