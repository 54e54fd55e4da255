// The hook every lease's start and end passes through inside the transaction that records it:
// whatever bills leases (owned-GPU time in the ledger: daemon/placement/owned_gpu_billing.h)
// implements it, so jobs/ does not depend on the concern that bills.
//
// Thread safety: both are called on the store's writer thread, inside the lease's transaction;
// they read and write only through that WriteTxn (never the Store: they must not block on it).
#pragma once

#include <cstdint>
#include <vector>

#include "base/expected.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::jobs {

class LeaseRecorder {
 public:
  virtual ~LeaseRecorder() = default;
  // `job` (already carrying the new worker and epoch) was just leased to `worker` at now_ms,
  // taking the worker's GPUs `gpus` (indices; empty: a CPU-only worker). An error refuses the
  // lease (the change rolls back).
  virtual Status lease_granted(store::WriteTxn& txn, const store::JobRow& job, const store::WorkerRow& worker,
                               const std::vector<int>& gpus, int64_t now_ms) = 0;
  // The lease of `job` (its worker and epoch still set) ended at now_ms: completed, failed,
  // cancelled, given back, expired or its machine gone. An error refuses that change.
  virtual Status lease_ended(store::WriteTxn& txn, const store::JobRow& job, int64_t now_ms) = 0;
  // One node of `job`'s gang, on `worker_id`, left at now_ms while the others go on (a lost node
  // being replaced): only its share ends.
  virtual Status node_ended(store::WriteTxn& txn, const store::JobRow& job, int64_t worker_id, int64_t now_ms) = 0;
};

}  // namespace jobctl::daemon::jobs
