// The outcome of a background pass that runs again and again (a placement pass, lease expiry, a
// checkpoint sweep), written to a Log so that a failure is never dropped and a lasting one does
// not write a line per tick: a failure is logged when it begins and whenever its message changes,
// and while the same failure lasts at most once per `repeat_ms` with how many passes failed;
// the first success after failures is logged once ("... recovered after N failed passes").
//
//   PassLog expiry("lease expiry");
//   expiry.report(expire_leases(), log, clock.now_ms());
//   -> "lease expiry failed: unavailable: the store is closed"
//
// Thread safety: report() may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "base/expected.h"
#include "base/log.h"
#include "base/mutex.h"

namespace jobctl {

class PassLog {
 public:
  explicit PassLog(std::string pass, int64_t repeat_ms = 60'000) : pass_(std::move(pass)), repeat_ms_(repeat_ms) {}

  // Records one pass's outcome at `now_ms`, writing to `log` as the header says.
  void report(const Status& outcome, Log& log, int64_t now_ms) JOBCTL_EXCLUDES(mu_) {
    std::string line;
    {
      MutexLock lock(mu_);
      if (outcome) {
        if (failures_ == 0) return;
        line = pass_ + " recovered after " + std::to_string(failures_) + " failed pass" + (failures_ == 1 ? "" : "es");
        failures_ = 0;
        last_message_.clear();
      } else {
        const Error& e = outcome.error();
        std::string message = std::string(to_string(e.code)) + ": " + e.message;
        if (!e.field.empty()) message += " (" + e.field + ")";
        ++failures_;
        const bool changed = message != last_message_;
        if (!changed && now_ms - last_logged_ms_ < repeat_ms_) return;
        line = pass_ + " failed: " + message;
        if (!changed) line += " (" + std::to_string(failures_) + " failed passes so far)";
        last_message_ = std::move(message);
        last_logged_ms_ = now_ms;
      }
    }
    log.write(line);
  }

 private:
  const std::string pass_;
  const int64_t repeat_ms_;
  Mutex mu_;
  int64_t failures_ JOBCTL_GUARDED_BY(mu_) = 0;  // consecutive
  std::string last_message_ JOBCTL_GUARDED_BY(mu_);
  int64_t last_logged_ms_ JOBCTL_GUARDED_BY(mu_) = 0;
};

}  // namespace jobctl
