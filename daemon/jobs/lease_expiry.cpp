// JobService::expire_leases and release_worker_leases (docs/recovery.md, "A worker
// dies"), and what reads a lease's newest heartbeat from memory (live_leases.h). Separate from
// job_service.cpp so that recovery's logic lives in one place.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "daemon/jobs/job_service.h"
#include "daemon/jobs/job_transition.h"
#include "daemon/jobs/lease_fence.h"
#include "scheduler/job_state.h"

namespace jobctl::daemon::jobs {

using nlohmann::json;
using store::WriteTxn;

// One lost lease: running (or placed) -> preempted -> queued, a recovery counted (failed past
// max_recoveries), the worker marked lost. The job is queued unplaced, so placement re-places it.
Status JobService::lose_lease_in(WriteTxn& txn, store::JobRow job, const std::string& reason, int64_t now) {
  const std::optional<int64_t> worker_id = job.worker_id;
  json detail = {{"worker_id", worker_id ? json(*worker_id) : json(nullptr)},
                 {"epoch", job.lease_epoch},
                 {"reason", reason}};
  if (auto st = end_lease_in(txn, job, now); !st) return st;
  job.lease_expires_ms.reset();
  job.recoveries += 1;
  // A move asked of this lease cannot happen now: the job is placed anew as after any loss.
  txn.on_commit([this, id = job.id] { moves_.forget(id); });
  // A job leased but never started counts too: its lease was lost all the same.
  if (auto st = transition_job(txn, job, JobState::preempted, "preempted", detail, now); !st) return st;
  if (job.recoveries > options_.max_recoveries) {
    job.error = "interrupted " + std::to_string(job.recoveries) + " times (more than max_recoveries " +
                std::to_string(options_.max_recoveries) + "); last reason: " + reason;
    if (auto st = transition_job(txn, job, JobState::failed, "failed", json{{"error", *job.error}}, now); !st)
      return st;
  } else {
    job.worker_id.reset();
    if (auto st = transition_job(txn, job, JobState::queued, "requeued", json{{"recoveries", job.recoveries}}, now);
        !st)
      return st;
    QueuedJob q;  // queued again: no placement yet (placement re-places it)
    q.id = job.id;
    q.priority = job.priority;
    q.created_ms = job.created_ms;
    q.resource_gpu = job.resource_gpu;
    q.resource_gpus = job.resource_gpus;
    q.command = is_command_spec(job.spec_json);
    txn.on_commit([this, q] { on_job_queued(q); });
  }
  if (worker_id) {
    auto w = txn.worker(*worker_id);
    if (!w) return w.error();
    if (*w && (*w)->state != store::WorkerState::lost) {
      (*w)->state = store::WorkerState::lost;
      if (auto st = txn.update_worker(**w); !st) return st;
    }
  }
  return {};
}

Status JobService::end_lease_in(WriteTxn& txn, store::JobRow& job, int64_t now) {
  if (!job.worker_id) return {};
  if (auto live = live_.find(job.id, LeaseRef{*job.worker_id, job.lease_epoch}); live && live->progress_json)
    job.progress_json = live->progress_json;
  txn.on_commit([this, id = job.id] { live_.forget(id); });
  if (!lease_recorder_) return {};
  return lease_recorder_->lease_ended(txn, job, now);
}

void JobService::add_newest_heartbeat(store::JobRow& job) const {
  if (job.state != JobState::running || !job.worker_id) return;
  auto live = live_.find(job.id, LeaseRef{*job.worker_id, job.lease_epoch});
  if (!live) return;
  if (live->progress_json) job.progress_json = live->progress_json;
  job.lease_expires_ms = live->last_ms + live_.lease_timeout_ms();
}

void JobService::add_newest_heartbeat(store::LeaseSummary& lease) const {
  auto live = live_.find(lease.job_id, LeaseRef{lease.worker_id, lease.epoch});
  if (live && live->progress_json) lease.progress_json = live->progress_json;
}

Status JobService::store_heartbeat_in(WriteTxn& txn, store::JobRow job, const LiveHeartbeat& hb) {
  if (hb.progress_json) job.progress_json = hb.progress_json;
  job.lease_expires_ms = std::max(job.lease_expires_ms.value_or(0), hb.last_ms + live_.lease_timeout_ms());
  if (auto st = txn.update_job(job); !st) return st;
  txn.on_commit([this, id = job.id, hb, expires = *job.lease_expires_ms] {
    live_.stored(id, hb.lease, hb.last_ms, hb.progress_json, expires);
  });
  return {};
}

Status JobService::store_live_heartbeats() {
  auto unstored = live_.unstored();
  if (unstored.empty()) return {};
  return store_.write([this, unstored = std::move(unstored)](WriteTxn& txn) -> Status {
    for (const auto& [id, hb] : unstored) {
      auto found = txn.job(id);
      if (!found) return found.error();
      if (!*found || (*found)->state != JobState::running || !check_lease_holder(**found, hb.lease)) continue;
      if (auto st = store_heartbeat_in(txn, std::move(**found), hb); !st) return st;
    }
    return {};
  });
}

Expected<int> JobService::expire_leases() {
  const int64_t now = clock_.now_ms();
  const int timeout_s = options_.lease_timeout_s;
  return store_.write_value<int>([this, now, timeout_s](WriteTxn& txn) -> Expected<int> {
    auto ids = txn.jobs_with_expired_leases(now);
    if (!ids) return ids.error();
    int expired = 0;
    for (int64_t id : *ids) {
      auto found = txn.job(id);
      if (!found) return found.error();
      if (!*found) continue;
      const std::optional<int64_t> worker_id = (*found)->worker_id;
      // Heard from within the timeout, only not stored since (live_leases.h): renewed, not expired.
      if (worker_id) {
        const LeaseRef lease{*worker_id, (*found)->lease_epoch};
        if (auto live = live_.find(id, lease); live && now - live->last_ms < int64_t{timeout_s} * 1000) {
          if (auto st = store_heartbeat_in(txn, std::move(**found), *live); !st) return st.error();
          continue;
        }
      }
      const std::string reason = "lease expired: no heartbeat from worker " +
                                 (worker_id ? std::to_string(*worker_id) : std::string("?")) + " for " +
                                 std::to_string(timeout_s) + " s";
      if (auto st = lose_lease_in(txn, std::move(**found), reason, now); !st) return st.error();
      ++expired;
    }
    return expired;
  });
}

Expected<int> JobService::release_worker_leases(int64_t worker_id, const std::string& reason) {
  const int64_t now = clock_.now_ms();
  return store_.write_value<int>([this, worker_id, reason, now](WriteTxn& txn) -> Expected<int> {
    auto ids = txn.jobs_leased_to(worker_id);
    if (!ids) return ids.error();
    int released = 0;
    for (int64_t id : *ids) {
      auto found = txn.job(id);
      if (!found) return found.error();
      if (!*found) continue;
      if (auto st = lose_lease_in(txn, std::move(**found), reason, now); !st) return st.error();
      ++released;
    }
    return released;
  });
}

}  // namespace jobctl::daemon::jobs
