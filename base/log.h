// Where a long-running program writes what its background work did — a pass that failed, a
// pass that recovered — as lines for the people who run it (LevelDB's Logger). Injected like the
// clock: the daemon writes to stderr (its log file), tests read what was written.
//
// Ownership and thread safety: write() may be called from any thread; each line is written whole.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include "base/mutex.h"

namespace jobctl {

class Log {
 public:
  virtual ~Log() = default;
  // One line, without its newline.
  virtual void write(std::string_view line) = 0;
};

// Lines to stderr, each after `prefix` ("jobctld: ").
class StderrLog final : public Log {
 public:
  explicit StderrLog(std::string prefix = {}) : prefix_(std::move(prefix)) {}
  void write(std::string_view line) override {
    std::string text = prefix_;
    text.append(line);
    text.push_back('\n');
    MutexLock lock(mu_);
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
  }

 private:
  const std::string prefix_;
  Mutex mu_;  // one line at a time
};

// The log of code that was given none: stderr, unprefixed. Lives for the whole program.
inline Log& stderr_log() {
  static StderrLog* log = new StderrLog();  // never destroyed: usable from any destructor
  return *log;
}

}  // namespace jobctl
