#include "daemon/ledger/lease_ledger.h"

#include <algorithm>

#include "daemon/ledger/ledger.h"

namespace jobctl::daemon::ledger {

std::vector<std::string> owned_resources(int64_t worker_id, const std::vector<int>& gpus) {
  const std::string base = "local:" + std::to_string(worker_id) + ":";
  if (gpus.empty()) return {base + "cpu"};
  std::vector<std::string> out;
  out.reserve(gpus.size());
  for (int k : gpus) out.push_back(base + "gpu" + std::to_string(k));
  return out;
}

Status open_lease_in(store::WriteTxn& txn, const OwnedLease& lease) {
  // Whatever of this job is still open belonged to an earlier lease: it ended by now at the latest
  // (a gang's later nodes join its first one's rows instead).
  if (!lease.gang_node)
    if (auto closed = close_lease_in(txn, lease.job_id, lease.start_ms); !closed) return closed.error();
  const auto resources = owned_resources(lease.worker_id, lease.gpus);
  // The job's on-demand reference is for the whole job: each GPU row carries its share (0: no
  // on-demand equivalent, which the reports show as such).
  double reference = 0;
  auto job = txn.job(lease.job_id);
  if (!job) return job.error();
  if (*job && (*job)->placement_json)
    reference = ledger_on_demand_reference(*(*job)->placement_json).value_or(0.0) /
                static_cast<double>(resources.size() * static_cast<size_t>(std::max(lease.gang_nodes, 1)));
  for (const auto& r : resources) {
    LedgerEntry e{lease.job_id, r, "local", lease.start_ms, lease.start_ms, lease.usd_per_gpu_hour, lease.user, reference};
    e.open = true;
    if (auto st = Ledger::accrue_in(txn, e); !st) return st;
  }
  return {};
}

Expected<int> close_lease_in(store::WriteTxn& txn, int64_t job_id, int64_t end_ms, std::optional<int64_t> worker_id) {
  auto open = txn.open_ledger_rows(job_id);
  if (!open) return open.error();
  const std::string node = worker_id ? "local:" + std::to_string(*worker_id) + ":" : std::string();
  int closed = 0;
  for (const auto& r : *open) {
    if (!node.empty() && r.resource.rfind(node, 0) != 0) continue;
    ++closed;
    LedgerEntry e{r.job_id, r.resource, r.kind, r.start_ms, std::max(end_ms, r.start_ms), r.usd_per_hour, r.user,
                  r.on_demand_usd_per_hour};
    if (auto st = Ledger::accrue_in(txn, e); !st) return st.error();
  }
  return closed;
}

}  // namespace jobctl::daemon::ledger
