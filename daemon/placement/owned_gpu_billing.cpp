#include "daemon/placement/owned_gpu_billing.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "daemon/jobs/worker_capabilities.h"
#include "daemon/ledger/lease_ledger.h"
#include "daemon/ledger/ledger.h"
#include "daemon/placement/placement_matcher.h"

namespace jobctl::daemon::placement {

OwnedGpuBilling::OwnedGpuBilling(const PlacementSettings& settings)
    : prices_({}, settings.local_gpus, cost::EfficiencyCalibrator{}, placement_config(settings)) {}

Status OwnedGpuBilling::lease_granted(store::WriteTxn& txn, const store::JobRow& job, const store::WorkerRow& worker,
                                      const std::vector<int>& gpus, int64_t now_ms) {
  // A cloud instance's time is billed by the provisioner. A Slurm batch job's worker runs on the
  // team's own GPUs: billed here like any owned GPU.
  const jobs::WorkerCapabilities* caps = &worker.capabilities;
  if (caps->instance && caps->instance->provider != "slurm") return {};
  auto user = ledger::ledger_user_in(txn, job);
  if (!user) return user.error();
  ledger::OwnedLease lease;
  lease.job_id = job.id;
  lease.worker_id = worker.id;
  lease.start_ms = now_ms;
  if (!caps->gpus.empty()) {
    lease.gpus = gpus;
    // A lease that named no GPUs (a matcher that does not track them) bills the first
    // resources.gpus of the worker's.
    if (lease.gpus.empty())
      for (int k = 0; k < std::clamp(job.resource_gpus, 1, static_cast<int>(caps->gpus.size())); ++k)
        lease.gpus.push_back(k);
  }
  lease.usd_per_gpu_hour = std::max(usd_per_gpu_hour(worker_gpu_model(*caps)), 0.0);
  lease.user = std::move(*user);
  lease.gang_nodes = job.resource_nodes;
  lease.gang_node = job.resource_nodes > 1 && job.worker_id && *job.worker_id != worker.id;
  return ledger::open_lease_in(txn, lease);
}

Status OwnedGpuBilling::lease_ended(store::WriteTxn& txn, const store::JobRow& job, int64_t now_ms) {
  auto closed = ledger::close_lease_in(txn, job.id, now_ms);
  return closed ? Status{} : Status{closed.error()};
}

Status OwnedGpuBilling::node_ended(store::WriteTxn& txn, const store::JobRow& job, int64_t worker_id, int64_t now_ms) {
  auto closed = ledger::close_lease_in(txn, job.id, now_ms, worker_id);
  return closed ? Status{} : Status{closed.error()};
}

}  // namespace jobctl::daemon::placement
