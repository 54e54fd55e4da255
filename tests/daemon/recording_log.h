// A Log that keeps every line written to it, for tests that check what a background pass reported.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/log.h"
#include "base/mutex.h"

namespace jobctl::daemon::testing {

class RecordingLog final : public Log {
 public:
  void write(std::string_view line) override {
    MutexLock lock(mu_);
    lines_.emplace_back(line);
  }
  std::vector<std::string> lines() {
    MutexLock lock(mu_);
    return lines_;
  }
  // Lines that contain every one of `parts`.
  size_t count(std::initializer_list<std::string_view> parts) {
    size_t n = 0;
    for (const auto& l : lines()) {
      bool all = true;
      for (auto p : parts) all = all && l.find(p) != std::string::npos;
      n += all;
    }
    return n;
  }

 private:
  Mutex mu_;
  std::vector<std::string> lines_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::daemon::testing
