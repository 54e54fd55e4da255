#include "daemon/service/job_queue.h"

namespace jobctl::daemon::service {

void JobQueue::insert(const QueuedJob& job) {
  erase(job.id);
  auto it = jobs_.insert(job).first;
  by_id_[job.id] = it;
}

bool JobQueue::erase(int64_t id) {
  auto found = by_id_.find(id);
  if (found == by_id_.end()) return false;
  jobs_.erase(found->second);
  by_id_.erase(found);
  return true;
}

}  // namespace jobctl::daemon::service
