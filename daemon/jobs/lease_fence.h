// The lease fence: every report a worker makes about a job (heartbeat, complete, fail, preempt,
// a checkpoint upload or rejection) names the lease it acts under, (worker, epoch), and is
// refused with code stale_epoch (409) unless that is the job's current lease. The epoch grows by
// one per lease, so a worker presumed dead whose job was leased again can change nothing.
//
// Whether the caller really is that worker is decided before, by its worker secret
// (daemon/http/auth_gate.h); the fence decides whether that worker still holds the job.
//
// A gang (a job on several machines) has one lease per node under the job's epoch: rank 0's is the
// job's own (worker_id), the others' are its gang_members rows; check_reporter fences both.
//
// Thread safety: functions over a job row read in the caller's transaction.
#pragma once

#include <optional>
#include <vector>

#include "base/expected.h"
#include "daemon/jobs/protocol.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::jobs {

// The job's current lease is `lease`: same worker, same epoch (state not looked at, so that a
// retried report of a finished job can be recognised by its caller).
Status check_lease_holder(const JobRow& job, const LeaseRef& lease);
// The job is in a state where a lease is live (placed or running).
Status require_leased_state(const JobRow& job);
// Both: the report acts under the current lease of a job that is still leased.
Status check_lease(const JobRow& job, const LeaseRef& lease);
// The node of rank > 0 among `nodes` (a gang's gang_members rows) that `lease` names; none: no such.
std::optional<store::GangMemberRow> gang_node_of(const std::vector<store::GangMemberRow>& nodes, const LeaseRef& lease);
// Who makes a report about `job` under `lease`, read in `txn`: its own lease holder (nullopt; the
// job's state is the caller's to check, as for any report), or a node of rank > 0 of its current
// gang lease while the job is leased (that node). Errors: stale_epoch when it is neither (the
// holder check's error), the store's.
Expected<std::optional<store::GangMemberRow>> check_reporter(store::WriteTxn& txn, const JobRow& job,
                                                             const LeaseRef& lease);

// A report's job, read in `txn`, and who makes it (check_reporter's answer: none for its own lease
// holder, else the gang node). Errors: not_found when the job does not exist, check_reporter's.
struct ReportedJob {
  JobRow job;
  std::optional<store::GangMemberRow> node;
};
Expected<ReportedJob> job_reported_under(store::WriteTxn& txn, int64_t job_id, const LeaseRef& lease);

}  // namespace jobctl::daemon::jobs
