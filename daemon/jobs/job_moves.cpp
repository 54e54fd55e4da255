#include "daemon/jobs/job_moves.h"

namespace jobctl::daemon::jobs {

std::optional<MoveTarget> move_target_from_string(const std::string& s) {
  if (s == "local") return MoveTarget::local;
  if (s == "on_demand") return MoveTarget::on_demand;
  if (s == "spot") return MoveTarget::spot;
  return std::nullopt;
}

std::string to_string(MoveTarget t) {
  switch (t) {
    case MoveTarget::local: return "local";
    case MoveTarget::on_demand: return "on_demand";
    case MoveTarget::spot: return "spot";
    case MoveTarget::anywhere: break;
  }
  return "anywhere";
}

void JobMoves::request(int64_t job_id, MoveRequest request) {
  MutexLock lock(mu_);
  requested_[job_id] = std::move(request);
}

bool JobMoves::requested(int64_t job_id) const {
  MutexLock lock(mu_);
  return requested_.count(job_id) != 0;
}

std::optional<MoveRequest> JobMoves::request_of(int64_t job_id) const {
  MutexLock lock(mu_);
  auto it = requested_.find(job_id);
  if (it == requested_.end()) return std::nullopt;
  return it->second;
}

std::optional<MoveRequest> JobMoves::given_back(int64_t job_id) {
  MutexLock lock(mu_);
  auto it = requested_.find(job_id);
  if (it == requested_.end()) return std::nullopt;
  MoveRequest r = std::move(it->second);
  requested_.erase(it);
  if (r.target == MoveTarget::anywhere) targets_.erase(job_id);
  else targets_[job_id] = r.target;
  return r;
}

MoveTarget JobMoves::target(int64_t job_id) const {
  MutexLock lock(mu_);
  auto it = targets_.find(job_id);
  return it == targets_.end() ? MoveTarget::anywhere : it->second;
}

void JobMoves::leased(int64_t job_id) {
  MutexLock lock(mu_);
  targets_.erase(job_id);
}

void JobMoves::forget(int64_t job_id) {
  MutexLock lock(mu_);
  requested_.erase(job_id);
  targets_.erase(job_id);
}

}  // namespace jobctl::daemon::jobs
