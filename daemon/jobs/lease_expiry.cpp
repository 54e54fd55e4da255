// Housekeeping::expire_leases, release_worker_leases and retire_replaced_workers (docs/recovery.md,
// "A worker dies"):
// recovery's logic in one place.
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/jobs/housekeeping.h"
#include "daemon/jobs/job_transition.h"
#include "daemon/jobs/lease_fence.h"
#include "scheduler/job_state.h"

namespace jobctl::daemon::jobs {

using nlohmann::json;
using store::WriteTxn;

// One lost lease: running (or placed) -> preempted -> queued, a recovery counted (failed past
// max_recoveries), the lost worker marked lost. The job is queued unplaced, so placement re-places it.
// A gang that replaces lost nodes loses only the node, when it is not rank 0.
Status Housekeeping::lose_lease_in(WriteTxn& txn, store::JobRow& job, std::optional<int64_t> worker_id,
                                   std::optional<int> rank, const std::string& reason, int64_t now) {
  if (worker_id && !rank && job.resource_nodes > 1 && job.worker_id != worker_id) {
    auto members = txn.gang_members(job.id);
    if (!members) return members.error();
    if (auto node = gang_node_of(*members, LeaseRef{*worker_id, job.lease_epoch})) rank = node->rank;
  }
  json detail = {{"worker_id", worker_id ? json(*worker_id) : json(nullptr)},
                 {"epoch", job.lease_epoch},
                 {"reason", reason}};
  if (rank) detail["rank"] = *rank;
  if (worker_id && rank && *rank > 0 && job.lease() && LeaseReports::replaces_lost_nodes(job)) {
    if (auto st = reports_.vacate_node_in(txn, job, *rank, reason, now); !st) return st;
  } else if (auto st = reports_.interrupt_in(txn, job, detail, reason, now); !st) {
    return st;
  }
  if (!worker_id) return {};
  auto w = txn.worker(*worker_id);
  if (!w) return w.error();
  if (*w && (*w)->state != store::WorkerState::lost) {
    (*w)->state = store::WorkerState::lost;
    if (auto st = txn.update_worker(**w); !st) return st;
  }
  return {};
}

Expected<int> Housekeeping::expire_leases() {
  const int64_t now = clock_.now_ms();
  const int64_t steady = clock_.steady_ms();
  const int timeout_s = options_.lease_timeout_s;
  // Leases silent for the timeout on the steady clock expire even when their stored (wall-clock)
  // expiry is still ahead: the wall clock was stepped back.
  std::vector<int64_t> silent = reports_.live().silent(steady);
  return store_.write_value<int>([this, now, steady, timeout_s, silent](WriteTxn& txn) -> Expected<int> {
    auto stored_ids = txn.jobs_with_expired_leases(now);
    if (!stored_ids) return stored_ids.error();
    const std::set<int64_t> past_stored_expiry(stored_ids->begin(), stored_ids->end());
    std::set<int64_t> ids = past_stored_expiry;
    ids.insert(silent.begin(), silent.end());
    int expired = 0;
    for (int64_t id : ids) {
      auto found = txn.job(id);
      if (!found) return found.error();
      if (!*found) continue;
      const std::optional<int64_t> worker_id = (*found)->worker_id;
      // Heard from within the timeout (steady clock), only not stored since (live_leases.h):
      // renewed, not expired, whatever the wall clock did.
      if (worker_id) {
        const LeaseRef lease{*worker_id, (*found)->lease_epoch};
        auto live = reports_.live().find(id, lease);
        if (live && steady - live->last_steady_ms < int64_t{timeout_s} * 1000) {
          // Stored as heard that long ago by the wall clock of now, should it have been stepped since.
          LiveHeartbeat hb = *live;
          hb.last_ms = now - (steady - live->last_steady_ms);
          if (auto st = reports_.store_heartbeat_in(txn, std::move(**found), hb); !st) return st.error();
          continue;
        }
        // Listed only as silent in memory: only when the entry is this lease's, and it is still leased.
        if (!past_stored_expiry.count(id) && (!live || !(*found)->lease())) continue;
      } else if (!past_stored_expiry.count(id)) {
        continue;
      }
      const std::string reason = "lease expired: no heartbeat from worker " +
                                 (worker_id ? std::to_string(*worker_id) : std::string("?")) + " for " +
                                 std::to_string(timeout_s) + " s";
      if (auto st = lose_lease_in(txn, **found, worker_id, std::nullopt, reason, now); !st) return st.error();
      ++expired;
    }
    // A gang's other nodes renew their own leases: one that stopped stops the gang (its rank 0
    // holds the job's lease, checked above).
    auto members = txn.expired_gang_members(now);
    if (!members) return members.error();
    std::set<int64_t> stopped;
    for (const auto& m : *members) {
      if (stopped.count(m.job_id)) continue;
      auto found = txn.job(m.job_id);
      if (!found) return found.error();
      if (!*found || (*found)->lease_epoch != m.epoch || !(*found)->lease()) continue;
      if (m.vacant()) {  // no replacement came in time: the whole gang restarts
        const std::string reason = "gang node " + std::to_string(m.rank) + " was lost and not replaced within " +
                                   std::to_string(options_.gang_assembly_s) + " s";
        if (auto st = lose_lease_in(txn, **found, std::nullopt, m.rank, reason, now); !st) return st.error();
      } else {
        const std::string reason = "gang node " + std::to_string(m.rank) + " lost: no heartbeat from worker " +
                                   std::to_string(m.worker_id) + " for " + std::to_string(timeout_s) + " s";
        if (auto st = lose_lease_in(txn, **found, m.worker_id, m.rank, reason, now); !st) return st.error();
      }
      ++expired;
      // A gang still leased (its node being replaced) may lose another node in this pass.
      if (!(*found)->lease()) stopped.insert(m.job_id);
    }
    return expired;
  });
}

Expected<int> Housekeeping::release_worker_leases_in(WriteTxn& txn, int64_t worker_id, const std::string& reason,
                                                     int64_t now) {
  auto ids = txn.jobs_leased_to(worker_id);
  if (!ids) return ids.error();
  int released = 0;
  for (int64_t id : *ids) {
    auto found = txn.job(id);
    if (!found) return found.error();
    if (!*found) continue;
    // The worker may hold the job as one node of a gang: the whole gang stops, this worker is the
    // one lost.
    if (auto st = lose_lease_in(txn, **found, worker_id, std::nullopt, reason, now); !st) return st.error();
    ++released;
  }
  return released;
}

Expected<int> Housekeeping::release_worker_leases(int64_t worker_id, const std::string& reason) {
  const int64_t now = clock_.now_ms();
  return store_.write_value<int>([this, worker_id, reason, now](WriteTxn& txn) -> Expected<int> {
    return release_worker_leases_in(txn, worker_id, reason, now);
  });
}

Expected<int> Housekeeping::retire_replaced_workers(int64_t worker_id, const std::string& machine_id) {
  if (machine_id.empty()) return 0;
  auto workers = store_.list_workers();
  if (!workers) return workers.error();
  const int64_t now = clock_.now_ms();
  int released = 0;
  for (const auto& w : *workers) {
    if (w.id >= worker_id || w.state == store::WorkerState::gone || w.capabilities.machine_id != machine_id) continue;
    const std::string reason = "worker " + std::to_string(w.id) + "'s machine (" + machine_id +
                               ") registered again as worker " + std::to_string(worker_id);
    const int64_t old_id = w.id;
    auto n = store_.write_value<int>([this, old_id, reason, now](WriteTxn& txn) -> Expected<int> {
      auto lost = release_worker_leases_in(txn, old_id, reason, now);
      if (!lost) return lost;
      auto old = txn.worker(old_id);
      if (!old) return old.error();
      if (*old) {
        (*old)->state = store::WorkerState::gone;
        if (auto st = txn.update_worker(**old); !st) return st.error();
      }
      return lost;
    });
    if (!n) return n.error();
    broker_.retire_worker(old_id);
    log_.write("worker " + std::to_string(old_id) + " replaced: " + reason +
               (*n > 0 ? "; " + std::to_string(*n) + " lease(s) released" : ""));
    released += *n;
  }
  return released;
}

}  // namespace jobctl::daemon::jobs
