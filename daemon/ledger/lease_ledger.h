// Owned-GPU time in the ledger, one lease at a time: a lease on an owned machine is billed from
// the moment it is granted to the moment it ends, however short, for the GPUs the job leased (the
// ones the lease names: a 4-GPU worker may run four 1-GPU jobs at once), at the owned GPU's hourly
// price. Nothing samples: both
// ends are written by the transaction of the lease's own event, so a bill and the lease history
// cannot disagree.
//   - Granted (a worker takes the job): one open row per leased GPU, "local:<worker>:gpu<k>" for
//     each GPU index k the lease took ("local:<worker>:cpu" for a CPU-only worker), starting at
//     the grant.
//   - Ended (completed, failed, cancelled, given back, expired, its worker gone): the job's open
//     rows are closed at the time of that event.
// An open row is billed up to now whenever it is read (Store::ledger_rows), so the spend report,
// budgets and the spend metric see a running lease's cost so far.
//
// A restart mid-lease neither loses nor double-bills it: the open rows are in the database with
// the grant that made them; the lease's end closes them whenever it comes, before or after the
// restart (a lease whose worker died while the daemon was down ends when lease expiry finds it,
// after the restart's grace period, and is billed to then: the GPU was held until then). Each row
// is keyed by (resource, start) and closed once; a new grant of the same job first closes
// anything of it still open, at the new grant's time.
//
// Thread safety: functions over a WriteTxn, run inside a store change on the writer thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/expected.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::ledger {

struct OwnedLease {
  int64_t job_id = 0;
  int64_t worker_id = 0;
  int64_t start_ms = 0;          // the grant
  std::vector<int> gpus;         // the worker's GPU indices billed; empty: a CPU-only worker (its CPU is billed as one)
  double usd_per_gpu_hour = 0;   // the owned GPU's (or CPU's) price
  std::string user;              // whom the spend is booked to (ledger_user_in)
  // A node of a gang after its first (rank > 0): billed beside the nodes already open, and each
  // node's rows carry its share of the job's on-demand reference.
  bool gang_node = false;
  int gang_nodes = 1;
};

// The resources a lease bills: "local:<worker>:gpu<k>" for each index k; none: ":cpu".
std::vector<std::string> owned_resources(int64_t worker_id, const std::vector<int>& gpus);

// Writes the lease's open rows. Each row's on-demand reference is the job placement's (ledger.h)
// shared among its GPUs. Errors: invalid_argument for a bad price, or the store's.
Status open_lease_in(store::WriteTxn& txn, const OwnedLease& lease);

// Closes every open row of the job at `end_ms` (not before its start), or only those of one
// worker's resources (a gang's node that left) when `worker_id` is given. Returns how many.
Expected<int> close_lease_in(store::WriteTxn& txn, int64_t job_id, int64_t end_ms,
                             std::optional<int64_t> worker_id = std::nullopt);

}  // namespace jobctl::daemon::ledger
