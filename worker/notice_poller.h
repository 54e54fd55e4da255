// Polls a cloud's interruption-notice endpoint (AWS style, docs/architecture.md "Clouds": 404 until a
// notice, then 200 with {"action": "terminate"|"stop", "time": "<RFC 3339>"}) every interval on
// its own thread; on a notice it requests the worker's stop with reason "spot interruption
// notice", which makes every running trainer checkpoint at once (docs/recovery.md). Transport
// errors and other answers are logged once per kind and polling goes on.
//
// Ownership and thread safety: owns its thread (joined by the destructor or stop()); borrows the
// StopSource and the log stream (writes to it from its thread: give it a thread-safe stream or
// one nobody else writes to concurrently, like std::cerr).
#pragma once

#include <atomic>
#include <iosfwd>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "worker/stop_source.h"

namespace jobctl::worker {

// Reads a notice answer: the notice when status is 200 with a JSON object whose "action" is
// "terminate" or "stop"; nullopt otherwise (404: no notice yet).
std::optional<nlohmann::json> parse_notice(long status, const std::string& body);

class NoticePoller {
 public:
  NoticePoller(std::string url, int interval_ms, StopSource& stop, std::ostream& log);
  ~NoticePoller();
  NoticePoller(const NoticePoller&) = delete;
  NoticePoller& operator=(const NoticePoller&) = delete;

  void stop();
  // True once a notice was seen.
  bool noticed() const { return noticed_.load(); }
  // steady_clock milliseconds when the notice was seen (0: none); for measurements.
  int64_t noticed_at_ms() const { return noticed_at_ms_.load(); }

 private:
  void run();
  std::string url_;
  int interval_ms_;
  StopSource& stop_;
  std::ostream& log_;
  std::atomic<bool> quit_{false};
  std::atomic<bool> noticed_{false};
  std::atomic<int64_t> noticed_at_ms_{0};
  StopSource wake_;  // wakes the thread at once on stop()
  std::thread thread_;
};

}  // namespace jobctl::worker
