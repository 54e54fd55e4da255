#include "worker/pending_log.h"

#include <algorithm>

namespace jobctl::worker {

void PendingLog::append(std::string_view line) {
  const int64_t now = clock_.now_ms();
  MutexLock lock(mu_);
  Pending p{protocol::OutputLine{now, std::string(line)}, 0};
  appended_ += line_bytes(p);
  pending_ += line_bytes(p);
  p.end = appended_;
  lines_.push_back(std::move(p));
  // What a heartbeat would carry: the text and the JSON around each line ({"time_ms":...,"text":""}),
  // so that many short lines cannot make a heartbeat larger than jobctld takes.
  constexpr int64_t kLineOverhead = 40;
  const auto weight = [](int64_t bytes, size_t lines) { return bytes + kLineOverhead * static_cast<int64_t>(lines); };
  if (weight(pending_, lines_.size()) > static_cast<int64_t>(cap_)) {
    while (weight(pending_, lines_.size()) > static_cast<int64_t>(cap_ / 2) && lines_.size() > 1) {
      pending_ -= line_bytes(lines_.front());
      lines_.pop_front();
    }
  }
}

PendingLog::Taken PendingLog::take() const {
  MutexLock lock(mu_);
  Taken t;
  const int64_t gap = front() - delivered_;
  if (gap > 0) {
    // Stamped with the time of the first line after the gap (or now, when none is pending).
    const int64_t at = lines_.empty() ? clock_.now_ms() : lines_.front().line.time_ms;
    t.lines.push_back(protocol::OutputLine{at, "[... " + std::to_string(gap) + " bytes of output dropped on the worker ...]"});
    t.dropped = gap;
  }
  for (const Pending& p : lines_) t.lines.push_back(p.line);
  t.end = lines_.empty() ? appended_ : lines_.back().end;
  return t;
}

void PendingLog::delivered(const Taken& taken) {
  MutexLock lock(mu_);
  // Lines dropped since take() that were among the taken ones were delivered all the same; a drop
  // past taken.end is a gap the next take() reports.
  delivered_ = std::max(delivered_, taken.end);
  while (!lines_.empty() && lines_.front().end <= taken.end) {
    pending_ -= line_bytes(lines_.front());
    lines_.pop_front();
  }
}

bool PendingLog::empty() const {
  MutexLock lock(mu_);
  return lines_.empty() && front() == delivered_;
}

}  // namespace jobctl::worker
