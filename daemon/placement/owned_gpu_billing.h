// What an owned-GPU lease costs, recorded at the lease's events: the jobs::LeaseRecorder the job
// service calls when a lease starts and when it ends (docs/cost-model.md, "The ledger").
//
// A lease on a local worker (one registered without an "instance") opens ledger rows for the GPUs
// the job leased — its resources.gpus, at most the worker's; a CPU-only worker bills its CPU as
// one — at the owned model's price per GPU-hour: cost.local_gpus under cost.pricing, a model with
// no inventory entry (and the CPU) at its board power (scheduler::PlacementContext::
// local_usd_per_gpu_hour). Its end closes them; daemon/ledger/lease_ledger.h says how, and why a
// restart mid-lease neither loses nor double-bills it. A cloud instance's worker is billed by the
// provisioner instead (instance time, not leases).
//
// Ownership and thread safety: holds an immutable price table built at construction. Both hooks
// run on the store's writer thread inside the lease's transaction and read only through it.
#pragma once

#include <string_view>

#include "daemon/jobs/lease_recorder.h"
#include "daemon/placement/placement_config.h"
#include "scheduler/placement.h"

namespace jobctl::daemon::placement {

class OwnedGpuBilling final : public jobs::LeaseRecorder {
 public:
  explicit OwnedGpuBilling(const PlacementSettings& settings);

  Status lease_granted(store::WriteTxn& txn, const store::JobRow& job, const store::WorkerRow& worker,
                       const std::vector<int>& gpus, int64_t now_ms) override;
  Status lease_ended(store::WriteTxn& txn, const store::JobRow& job, int64_t now_ms) override;
  Status node_ended(store::WriteTxn& txn, const store::JobRow& job, int64_t worker_id, int64_t now_ms) override;

  // One hour of one owned GPU of this model (canonical name, "cpu" for a CPU).
  double usd_per_gpu_hour(std::string_view gpu_model) const { return prices_.local_usd_per_gpu_hour(gpu_model); }

 private:
  const scheduler::PlacementContext prices_;  // no offers: the owned models' prices only
};

}  // namespace jobctl::daemon::placement
