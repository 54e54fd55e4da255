// Runs jobctl-train as a real child process: its stdout (JSON lines) comes back line by line,
// signals can be sent, the exit status is collected. For the integration tests.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "train/spec/json.h"

namespace jobctl::train::testing {

inline std::string train_binary() {
  const char* p = std::getenv("JOBCTL_TRAIN_BIN");
  return p ? p : "";
}

class TrainProcess {
 public:
  explicit TrainProcess(const std::vector<std::string>& args) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<char*> argv;
      const std::string bin = train_binary();
      argv.push_back(const_cast<char*>(bin.c_str()));
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(bin.c_str(), argv.data());
      std::_Exit(127);
    }
    ::close(fds[1]);
    out_ = ::fdopen(fds[0], "r");
  }
  ~TrainProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
    if (out_) std::fclose(out_);
  }
  TrainProcess(const TrainProcess&) = delete;
  TrainProcess& operator=(const TrainProcess&) = delete;

  // The next JSON line, or nullopt at end of output.
  std::optional<json::Value> next() {
    if (!out_) return std::nullopt;
    char* line = nullptr;
    size_t cap = 0;
    const ssize_t n = ::getline(&line, &cap, out_);
    if (n <= 0) {
      std::free(line);
      return std::nullopt;
    }
    std::string text(line, static_cast<size_t>(n));
    std::free(line);
    lines_.push_back(text);
    auto v = json::parse(text);
    if (!v) return json::Value(json::Object{{"event", json::Value("unparsable")}, {"text", json::Value(text)}});
    return *v;
  }
  // Reads everything that is left.
  std::vector<json::Value> rest() {
    std::vector<json::Value> all;
    while (auto v = next()) all.push_back(*v);
    return all;
  }
  void signal(int sig) { ::kill(pid_, sig); }
  // Exit code (or 128 + signal).
  int wait() {
    int st = 0;
    ::waitpid(pid_, &st, 0);
    reaped_ = true;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  bool reaped_ = false;
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
