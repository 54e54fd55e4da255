#include "daemon/slurm/slurm_partitions.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "cost/gpu_specs.h"
#include "slurm/partition.h"
#include "slurm/queue_wait.h"

namespace jobctl::daemon::slurm {

namespace {

// The time limit assumed for a job Slurm reports without one (an unlimited partition): a day,
// long enough that such a queue is not mistaken for a short one.
constexpr int64_t kUnlimitedJobS = 24 * 3600;

}  // namespace

std::vector<scheduler::LocalCapacity::Partition> partitions_for_placement(
    const SlurmSettings& settings, const std::vector<::jobctl::slurm::SlurmNode>& nodes,
    const std::vector<::jobctl::slurm::SlurmJob>& jobs, int64_t now_s) {
  const auto reported = ::jobctl::slurm::partitions_from_nodes(nodes);
  std::vector<scheduler::LocalCapacity::Partition> out;
  for (const auto& configured : settings.partitions) {
    auto it = std::find_if(reported.begin(), reported.end(),
                           [&](const auto& p) { return p.name == configured.name; });
    if (it == reported.end() || it->usable_nodes == 0) continue;
    ::jobctl::slurm::Partition p = *it;
    // A GRES without a count jobctl reads: the configuration says how many GPUs a node has.
    if (configured.gpus_per_node > 0) {
      p.gpus_per_node = configured.gpus_per_node;
      p.gpus = std::max(p.gpus, configured.gpus_per_node * p.usable_nodes);
    }
    if (p.gpus_per_node <= 0 || p.gpus <= 0) continue;
    scheduler::LocalCapacity::Partition offered;
    offered.name = p.name;
    offered.gpu_model = configured.gpu_model;
    offered.gpus_per_node = p.gpus_per_node;
    offered.tasks_per_node = configured.tasks_per_node;
    offered.machines = p.usable_nodes * configured.tasks_per_node;
    const cost::GpuSpec* spec = cost::identify_gpu(configured.gpu_model);
    offered.gpu_memory_gb = spec ? spec->memory_gb : 0;
    for (int k = 1; k <= p.gpus_per_node; ++k) {
      const auto wait = ::jobctl::slurm::estimate_queue_wait(p, jobs, k, now_s, kUnlimitedJobS);
      if (!wait.fits) break;
      offered.wait_hours.push_back(static_cast<double>(wait.wait_s) / 3600.0);
    }
    out.push_back(std::move(offered));
  }
  return out;
}

std::vector<scheduler::Machine> feasibility_machines(const SlurmSettings& settings,
                                                     const std::vector<scheduler::LocalCapacity::Partition>& read) {
  std::vector<scheduler::Machine> out;
  for (const auto& configured : settings.partitions) {
    scheduler::Machine m;
    m.name = "slurm partition " + configured.name;
    m.gpu = cost::identify_gpu(configured.gpu_model);
    m.gpu_name = configured.gpu_model;
    m.gpu_count = std::max(1, configured.gpus_per_node);
    m.memory_gib = m.gpu ? m.gpu->memory_gb : 0;
    // A cluster not read yet refuses no gang for its width.
    m.gang_machines = std::numeric_limits<int>::max();
    m.containers = settings.containers;
    for (const auto& p : read)
      if (p.name == configured.name && p.gpus_per_node > 0) {
        m.gpu_count = p.gpus_per_node;
        m.memory_gib = p.gpu_memory_gb;
        m.gang_machines = p.machines;
      }
    out.push_back(std::move(m));
  }
  return out;
}

SlurmPartitions::SlurmPartitions(const SlurmSettings& settings, const Clock& clock, Log& log)
    : settings_(settings), clock_(clock), commands_(settings.commands()), log_(log) {}

void SlurmPartitions::start() {
  // A failure is logged; jobctld starts all the same and polls again.
  auto poll_and_log = [this] { poll_log_.report(poll(), log_, clock_.now_ms()); };
  poll_and_log();
  ticker_.emplace(std::chrono::seconds(settings_.poll_s), poll_and_log);
}

void SlurmPartitions::stop() {
  if (ticker_) ticker_->stop();
}

Status SlurmPartitions::poll() {
  auto nodes = commands_.nodes();
  if (!nodes) return nodes.error();
  auto jobs = commands_.jobs();
  if (!jobs) return jobs.error();
  const int64_t now_s = clock_.now_ms() / 1000;
  auto partitions = partitions_for_placement(settings_, *nodes, *jobs, now_s);
  MutexLock lock(mu_);
  snapshot_ = std::move(partitions);
  return {};
}

std::vector<scheduler::LocalCapacity::Partition> SlurmPartitions::snapshot() const {
  const int64_t now = clock_.now_ms();
  MutexLock lock(mu_);
  std::vector<scheduler::LocalCapacity::Partition> out;
  out.reserve(snapshot_.size());
  for (const auto& p : snapshot_) {
    auto aside = set_aside_until_.find(p.name);
    if (aside == set_aside_until_.end() || aside->second <= now) out.push_back(p);
  }
  return out;
}

void SlurmPartitions::set_aside(const std::string& partition, int64_t until_ms) {
  MutexLock lock(mu_);
  int64_t& until = set_aside_until_[partition];
  until = std::max(until, until_ms);
}

}  // namespace jobctl::daemon::slurm
