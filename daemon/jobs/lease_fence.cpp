#include "daemon/jobs/lease_fence.h"

#include <string>

#include "daemon/jobs/job_service_support.h"
#include "scheduler/job_state.h"

namespace jobctl::daemon::jobs {

Status check_lease_holder(const JobRow& job, const LeaseRef& lease) {
  if (job.worker_id && *job.worker_id == lease.worker_id && job.lease_epoch == lease.epoch) return {};
  return make_error(ErrorCode::stale_epoch,
                    "job " + std::to_string(job.id) + " is not leased to worker " + std::to_string(lease.worker_id) +
                        " at epoch " + std::to_string(lease.epoch) + " (current epoch " +
                        std::to_string(job.lease_epoch) + ")",
                    "epoch");
}

Status require_leased_state(const JobRow& job) {
  if (job.state == JobState::placed || job.state == JobState::running) return {};
  return make_error(ErrorCode::stale_epoch,
                    "job " + std::to_string(job.id) + " is " + std::string(scheduler::to_string(job.state)) +
                        "; the lease is no longer valid",
                    "epoch");
}

std::optional<store::GangMemberRow> gang_node_of(const std::vector<store::GangMemberRow>& nodes, const LeaseRef& lease) {
  for (const auto& n : nodes)
    if (n.rank > 0 && n.worker_id == lease.worker_id && n.epoch == lease.epoch) return n;
  return std::nullopt;
}

Expected<std::optional<store::GangMemberRow>> check_reporter(store::WriteTxn& txn, const JobRow& job,
                                                             const LeaseRef& lease) {
  const Status holder = check_lease_holder(job, lease);
  if (holder) return std::optional<store::GangMemberRow>{};
  if (job.resource_nodes <= 1 || job.lease_epoch != lease.epoch) return holder.error();
  auto nodes = txn.gang_members(job.id);
  if (!nodes) return nodes.error();
  auto node = gang_node_of(*nodes, lease);
  if (!node) return holder.error();
  if (auto leased = require_leased_state(job); !leased) return leased.error();
  return node;
}

Expected<ReportedJob> job_reported_under(store::WriteTxn& txn, int64_t job_id, const LeaseRef& lease) {
  auto found = txn.job(job_id);
  if (!found) return found.error();
  if (!*found) return job_not_found(job_id);
  ReportedJob r{std::move(**found), std::nullopt};
  auto node = check_reporter(txn, r.job, lease);
  if (!node) return node.error();
  r.node = std::move(*node);
  return r;
}

Status check_lease(const JobRow& job, const LeaseRef& lease) {
  if (auto st = check_lease_holder(job, lease); !st) return st;
  return require_leased_state(job);
}

}  // namespace jobctl::daemon::jobs
