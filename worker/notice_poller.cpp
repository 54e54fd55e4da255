#include "worker/notice_poller.h"

#include <poll.h>

#include <chrono>
#include <ostream>

#include "client/http_client.h"

namespace jobctl::worker {

using nlohmann::json;

std::optional<json> parse_notice(long status, const std::string& body) {
  if (status != 200) return std::nullopt;
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("action") || !j["action"].is_string())
    return std::nullopt;
  const std::string action = j["action"];
  if (action != "terminate" && action != "stop") return std::nullopt;
  return j;
}

NoticePoller::NoticePoller(std::string url, int interval_ms, StopSource& stop, std::ostream& log)
    : url_(std::move(url)), interval_ms_(std::max(10, interval_ms)), stop_(stop), log_(log) {
  thread_ = std::thread([this] { run(); });
}

NoticePoller::~NoticePoller() { stop(); }

void NoticePoller::stop() {
  quit_.store(true);
  wake_.request();
  if (thread_.joinable()) thread_.join();
}

void NoticePoller::run() {
  client::HttpClientOptions o;
  o.connect_timeout_ms = 2000;
  o.timeout_ms = std::max(1000, interval_ms_);
  o.cancel = &wake_.flag();
  client::HttpClient http(url_, o);
  std::string last_problem;
  while (!quit_.load() && !stop_.requested()) {
    auto r = http.request("GET", "");
    if (r) {
      if (auto notice = parse_notice(r->status, r->body)) {
        noticed_at_ms_.store(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count());
        noticed_.store(true);
        log_ << "jobctl-worker: spot interruption notice " << notice->dump()
             << "; checkpointing every job and stopping\n";
        stop_.request("spot interruption notice");
        return;
      }
      if (r->status != 404 && last_problem != "status " + std::to_string(r->status)) {
        last_problem = "status " + std::to_string(r->status);
        log_ << "jobctl-worker: notice endpoint " << url_ << " answered HTTP " << r->status << " (ignored)\n";
      }
    } else if (!quit_.load() && last_problem != to_string(r.error().code)) {
      last_problem = std::string(to_string(r.error().code));
      log_ << "jobctl-worker: notice endpoint " << url_ << ": " << r.error().message << " (will retry)\n";
    }
    pollfd fds[2] = {{wake_.fd(), POLLIN, 0}, {stop_.fd(), POLLIN, 0}};
    ::poll(fds, 2, interval_ms_);
  }
}

}  // namespace jobctl::worker
