#include "daemon/jobs/live_leases.h"

#include <algorithm>

namespace jobctl::daemon::jobs {

namespace {
bool same_lease(const LeaseRef& a, const LeaseRef& b) { return a.worker_id == b.worker_id && a.epoch == b.epoch; }
}  // namespace

LiveLeases::LiveLeases(int64_t lease_timeout_ms, int64_t store_every_ms)
    : lease_timeout_ms_(lease_timeout_ms), store_every_ms_(store_every_ms) {}

bool LiveLeases::renew(int64_t job_id, const LeaseRef& lease, int64_t now_ms, int64_t steady_ms,
                       const std::optional<std::string>& progress_json) {
  MutexLock lock(mu_);
  auto it = entries_.find(job_id);
  if (it == entries_.end() || !same_lease(it->second.lease, lease)) return false;
  LiveHeartbeat& hb = it->second;
  if (hb.stored_expires_ms - now_ms <= lease_timeout_ms_ - store_every_ms_) return false;
  if (steady_ms >= hb.last_steady_ms) {
    hb.last_ms = now_ms;
    hb.last_steady_ms = steady_ms;
    if (progress_json) hb.progress_json = progress_json;
  }
  return true;
}

void LiveLeases::stored(int64_t job_id, const LeaseRef& lease, int64_t now_ms, int64_t steady_ms,
                        const std::optional<std::string>& progress_json, int64_t stored_expires_ms) {
  MutexLock lock(mu_);
  LiveHeartbeat& hb = entries_[job_id];
  if (!same_lease(hb.lease, lease)) hb = LiveHeartbeat{lease, 0, 0, std::nullopt, 0};
  // Completions of heartbeats that were in the store's queue together may come after a newer
  // heartbeat answered from memory: the newest one wins.
  if (steady_ms >= hb.last_steady_ms) {
    hb.last_ms = now_ms;
    hb.last_steady_ms = steady_ms;
    if (progress_json) hb.progress_json = progress_json;
  }
  hb.stored_expires_ms = std::max(hb.stored_expires_ms, stored_expires_ms);
}


std::optional<LiveHeartbeat> LiveLeases::find(int64_t job_id, const LeaseRef& lease) const {
  MutexLock lock(mu_);
  auto it = entries_.find(job_id);
  if (it == entries_.end() || !same_lease(it->second.lease, lease)) return std::nullopt;
  return it->second;
}

void LiveLeases::forget(int64_t job_id) {
  MutexLock lock(mu_);
  entries_.erase(job_id);
}

std::vector<int64_t> LiveLeases::silent(int64_t steady_ms) const {
  MutexLock lock(mu_);
  std::vector<int64_t> out;
  for (const auto& [id, hb] : entries_)
    if (steady_ms - hb.last_steady_ms > lease_timeout_ms_) out.push_back(id);
  return out;
}

size_t LiveLeases::prune(int64_t steady_ms) {
  MutexLock lock(mu_);
  return std::erase_if(entries_,
                       [&](const auto& kv) { return steady_ms - kv.second.last_steady_ms > lease_timeout_ms_; });
}

std::unordered_map<int64_t, LiveHeartbeat> LiveLeases::unstored() const {
  MutexLock lock(mu_);
  std::unordered_map<int64_t, LiveHeartbeat> out;
  for (const auto& [id, hb] : entries_)
    if (hb.last_ms + lease_timeout_ms_ > hb.stored_expires_ms) out.emplace(id, hb);
  return out;
}

size_t LiveLeases::size() const {
  MutexLock lock(mu_);
  return entries_.size();
}

}  // namespace jobctl::daemon::jobs
