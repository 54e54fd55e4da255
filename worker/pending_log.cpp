#include "worker/pending_log.h"

#include <algorithm>

namespace jobctl::worker {

void PendingLog::append(std::string_view line) {
  MutexLock lock(mu_);
  text_ += line;
  text_ += '\n';
  if (text_.size() > cap_) {
    const size_t cut = text_.size() - cap_ / 2;
    dropped_ += static_cast<int64_t>(cut);
    text_.erase(0, cut);
  }
}

PendingLog::Taken PendingLog::take() const {
  MutexLock lock(mu_);
  Taken t;
  if (dropped_ > 0) t.text = "[... " + std::to_string(dropped_) + " bytes of output dropped on the worker ...]\n";
  t.text += text_;
  t.bytes = text_.size();
  t.dropped = dropped_;
  return t;
}

void PendingLog::delivered(const Taken& taken) {
  MutexLock lock(mu_);
  // Bytes cut from the front since take(): first from what was delivered, then from what was not.
  const size_t cut_since = static_cast<size_t>(std::max<int64_t>(0, dropped_ - taken.dropped));
  const size_t still_here = taken.bytes > cut_since ? taken.bytes - cut_since : 0;
  text_.erase(0, std::min(still_here, text_.size()));
  dropped_ = static_cast<int64_t>(cut_since > taken.bytes ? cut_since - taken.bytes : 0);
}

bool PendingLog::empty() const {
  MutexLock lock(mu_);
  return text_.empty() && dropped_ == 0;
}

}  // namespace jobctl::worker
