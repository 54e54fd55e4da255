#include "scheduler/job_queue.h"

namespace jobctl::scheduler {

bool JobQueue::push(uint64_t handle, int priority, int64_t submitted_ms) {
  if (index_.count(handle)) return false;
  auto [it, inserted] = set_.insert(Entry{priority, submitted_ms, next_seq_++, handle});
  index_.emplace(handle, it);
  return inserted;
}

bool JobQueue::erase(uint64_t handle) {
  auto it = index_.find(handle);
  if (it == index_.end()) return false;
  set_.erase(it->second);
  index_.erase(it);
  return true;
}

std::optional<JobQueue::Entry> JobQueue::top() const {
  if (set_.empty()) return std::nullopt;
  return *set_.begin();
}

std::optional<JobQueue::Entry> JobQueue::pop() {
  if (set_.empty()) return std::nullopt;
  Entry e = *set_.begin();
  index_.erase(e.handle);
  set_.erase(set_.begin());
  return e;
}

JobQueue::const_iterator JobQueue::find(uint64_t handle) const {
  auto it = index_.find(handle);
  return it == index_.end() ? set_.end() : it->second;
}

}  // namespace jobctl::scheduler
