#include "daemon/jobs/lease_fence.h"

#include <string>

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

Expected<store::GangMemberRow> check_gang_node(store::WriteTxn& txn, const JobRow& job, const LeaseRef& lease) {
  if (job.resource_nodes > 1 && job.lease_epoch == lease.epoch) {
    auto members = txn.gang_members(job.id);
    if (!members) return members.error();
    for (const auto& m : *members)
      if (m.rank > 0 && m.worker_id == lease.worker_id && m.epoch == lease.epoch) return m;
  }
  return make_error(ErrorCode::stale_epoch,
                    "job " + std::to_string(job.id) + " has no node leased to worker " +
                        std::to_string(lease.worker_id) + " at epoch " + std::to_string(lease.epoch) +
                        " (current epoch " + std::to_string(job.lease_epoch) + ")",
                    "epoch");
}

Status check_lease(const JobRow& job, const LeaseRef& lease) {
  if (auto st = check_lease_holder(job, lease); !st) return st;
  return require_leased_state(job);
}

}  // namespace jobctl::daemon::jobs
