#include "daemon/jobs/worker_contacts.h"

#include <algorithm>

namespace jobctl::daemon::jobs {

void WorkerContacts::heard(int64_t worker_id, int64_t steady_ms, int64_t wall_ms) {
  MutexLock lock(mu_);
  WorkerContact& c = last_[worker_id];
  if (steady_ms >= c.steady_ms) c = WorkerContact{steady_ms, wall_ms};
}

std::optional<WorkerContact> WorkerContacts::last(int64_t worker_id) const {
  MutexLock lock(mu_);
  auto it = last_.find(worker_id);
  if (it == last_.end()) return std::nullopt;
  return it->second;
}

int64_t WorkerContacts::silence_ms(int64_t worker_id, int64_t steady_now_ms) const {
  MutexLock lock(mu_);
  auto it = last_.find(worker_id);
  const int64_t since = it == last_.end() ? started_steady_ms_ : std::max(it->second.steady_ms, started_steady_ms_);
  return std::max<int64_t>(0, steady_now_ms - since);
}

void WorkerContacts::forget(int64_t worker_id) {
  MutexLock lock(mu_);
  last_.erase(worker_id);
}

}  // namespace jobctl::daemon::jobs
