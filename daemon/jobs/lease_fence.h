// The lease fence: every report a worker makes about a job (heartbeat, complete, fail, preempt,
// a checkpoint upload or rejection) names the lease it acts under, (worker, epoch), and is
// refused with code stale_epoch (409) unless that is the job's current lease. The epoch grows by
// one per lease, so a worker presumed dead whose job was leased again can change nothing.
//
// Whether the caller really is that worker is decided before, by its worker secret
// (daemon/http/auth_gate.h); the fence decides whether that worker still holds the job.
//
// A gang (a job on several machines) has one lease per node under the job's epoch: rank 0's is the
// job's own (worker_id), the others' are its gang_members rows; check_gang_node fences those.
//
// Thread safety: functions over a job row read in the caller's transaction.
#pragma once

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
// The node of rank > 0 of `job`'s current gang lease that `lease` names, read in `txn`. Errors:
// stale_epoch when it names none (a job on one machine never has one), the store's.
Expected<store::GangMemberRow> check_gang_node(store::WriteTxn& txn, const JobRow& job, const LeaseRef& lease);

}  // namespace jobctl::daemon::jobs
