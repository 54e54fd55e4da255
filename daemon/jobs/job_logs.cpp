#include "daemon/jobs/job_logs.h"

#include <algorithm>

namespace jobctl::daemon::jobs {

void JobLogs::append(int64_t job_id, const std::string& text) {
  if (text.empty()) return;
  MutexLock lock(mu_);
  auto it = logs_.find(job_id);
  if (it == logs_.end()) {
    if (logs_.size() >= max_jobs_ && !by_age_.empty()) {
      logs_.erase(by_age_.front());
      by_age_.pop_front();
    }
    it = logs_.emplace(job_id, Log{}).first;
    it->second.age = by_age_.insert(by_age_.end(), job_id);
  } else {
    by_age_.splice(by_age_.end(), by_age_, it->second.age);
  }
  Log& log = it->second;
  log.kept += text;
  log.end += static_cast<int64_t>(text.size());
  if (log.kept.size() > max_bytes_) {
    // Drop whole lines where possible, so the kept part starts at a line.
    size_t cut = log.kept.size() - max_bytes_;
    const size_t nl = log.kept.find('\n', cut);
    if (nl != std::string::npos && nl + 1 < log.kept.size()) cut = nl + 1;
    log.kept.erase(0, cut);
  }
}

LogChunk JobLogs::read(int64_t job_id, int64_t after) const {
  MutexLock lock(mu_);
  LogChunk out;
  auto it = logs_.find(job_id);
  if (it == logs_.end()) {
    out.next = std::max<int64_t>(after, 0);
    return out;
  }
  const Log& log = it->second;
  const int64_t start = log.end - static_cast<int64_t>(log.kept.size());
  after = std::clamp<int64_t>(after, 0, log.end);
  if (after < start) {
    out.dropped_bytes = start - after;
    out.text = "[... " + std::to_string(out.dropped_bytes) + " bytes of earlier output dropped ...]\n";
    after = start;
  }
  out.text += log.kept.substr(static_cast<size_t>(after - start));
  out.next = log.end;
  return out;
}

}  // namespace jobctl::daemon::jobs
