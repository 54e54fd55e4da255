#include "slurm/queue_wait.h"

#include <algorithm>
#include <set>

namespace jobctl::slurm {

namespace {

bool on_partition_nodes(const SlurmJob& j, const std::set<std::string>& nodes) {
  for (const auto& n : expand_hostlist(j.nodes))
    if (nodes.count(n)) return true;
  return false;
}

// Takes the `n` slots that free up first; returns when the last of them frees up (the start).
int64_t take(std::vector<int64_t>& free_at, int n, int64_t earliest, int64_t hold_s) {
  std::sort(free_at.begin(), free_at.end());
  const int64_t start = std::max(earliest, free_at[static_cast<size_t>(n) - 1]);
  for (int i = 0; i < n; ++i) free_at[static_cast<size_t>(i)] = start + hold_s;
  return start;
}

}  // namespace

QueueWait estimate_queue_wait(const Partition& p, const std::vector<SlurmJob>& jobs, int gpus, int64_t now_s,
                              int64_t default_limit_s) {
  QueueWait w;
  w.gpus = p.gpus;
  const std::set<std::string> nodes(p.node_names.begin(), p.node_names.end());
  std::vector<int64_t> free_at(static_cast<size_t>(std::max(0, p.gpus)), now_s);
  // Running jobs first: they hold their GPUs until their expected end.
  for (const auto& j : jobs) {
    if (!j.running() || j.gpus <= 0) continue;
    if (j.partition != p.name && !on_partition_nodes(j, nodes)) continue;
    ++w.running_jobs;
    const int held = std::min(j.gpus, static_cast<int>(free_at.size()) - w.gpus_in_use);
    if (held <= 0) continue;
    const int64_t limit = j.time_limit_s.value_or(default_limit_s);
    const int64_t end = j.end_s > now_s ? j.end_s : std::max(now_s, j.start_s + limit);
    std::sort(free_at.begin(), free_at.end());
    // The slots still free at now_s are at the front after sorting.
    for (int i = 0; i < held; ++i) free_at[static_cast<size_t>(i)] = end;
    w.gpus_in_use += held;
  }
  std::vector<const SlurmJob*> pending;
  for (const auto& j : jobs)
    if (j.pending() && j.partition == p.name && j.gpus > 0) pending.push_back(&j);
  std::sort(pending.begin(), pending.end(), [](const SlurmJob* a, const SlurmJob* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    if (a->submit_s != b->submit_s) return a->submit_s < b->submit_s;
    return a->id < b->id;
  });
  for (const SlurmJob* j : pending) {
    if (j->gpus > p.gpus_per_node || j->gpus > static_cast<int>(free_at.size())) continue;  // never starts
    ++w.pending_jobs;
    take(free_at, j->gpus, now_s, j->time_limit_s.value_or(default_limit_s));
  }
  if (gpus > p.gpus_per_node || gpus > static_cast<int>(free_at.size())) {
    w.fits = false;
    return w;
  }
  if (gpus <= 0) return w;  // a CPU job: GPUs do not hold it back
  std::sort(free_at.begin(), free_at.end());
  w.wait_s = std::max<int64_t>(0, free_at[static_cast<size_t>(gpus) - 1] - now_s);
  return w;
}

}  // namespace jobctl::slurm
