// Where a long-running program writes what its background work did — a pass that failed, a
// pass that recovered — as lines for the people who run it (LevelDB's Logger). Injected like the
// clock: the daemon writes to stderr (its log file), tests read what was written.
//
// Ownership and thread safety: write() may be called from any thread; each line is written whole.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "base/log_line.h"

namespace jobctl {

class Log {
 public:
  virtual ~Log() = default;
  // One line, without its newline.
  virtual void write(std::string_view line) = 0;
};

// Lines to stderr, each after `prefix` ("jobctld: "), each with one write (base/log_line.h).
class StderrLog final : public Log {
 public:
  explicit StderrLog(std::string prefix = {}) : prefix_(std::move(prefix)) {}
  void write(std::string_view line) override { LogLine() << prefix_ << line; }

 private:
  const std::string prefix_;
};

// The log of code that was given none: stderr, unprefixed. Lives for the whole program.
inline Log& stderr_log() {
  static StderrLog* log = new StderrLog();  // never destroyed: usable from any destructor
  return *log;
}

}  // namespace jobctl
