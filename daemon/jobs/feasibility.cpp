#include "daemon/jobs/feasibility.h"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "scheduler/job.h"
#include "train/spec/model_stats.h"

namespace jobctl::daemon::jobs {

Feasibility::Feasibility(const std::vector<cost::Offer>& launchable, int max_instances,
                         const scheduler::ContainerSupport& cloud_containers) {
  MutexLock lock(mu_);
  for (const auto& o : launchable) {
    scheduler::Machine m;
    m.name = o.name();
    m.gpu = cost::identify_gpu(o.gpu_model, o.gpu_memory_gb);
    m.gpu_name = o.gpu_model;
    m.gpu_count = o.gpu_count;
    m.memory_gib = o.gpu_memory_gb;
    m.cloud = true;
    m.gang_machines = std::max(max_instances, 0);
    m.containers = cloud_containers;
    add_locked(std::move(m));
  }
}

void Feasibility::add_locked(scheduler::Machine m) {
  const std::string device = m.gpu ? std::string(m.gpu->name) : m.gpu_name;
  std::string containers = m.containers.runs_images ? "images" : "";
  for (const auto& a : m.containers.mounts) containers += ":" + a.prefix + (a.writable ? "+rw" : "");
  auto [it, added] = machines_.try_emplace({device, m.gpu_count, m.memory_gib, m.cloud, containers}, m);
  // One more worker of that kind (a partition not read yet counts as unlimited); offers of one
  // kind share the one cap on instances.
  if (!added && !m.cloud)
    it->second.gang_machines = static_cast<int>(std::min<int64_t>(
        std::numeric_limits<int>::max(), int64_t{it->second.gang_machines} + m.gang_machines));
}

void Feasibility::add_machine(scheduler::Machine machine) {
  MutexLock lock(mu_);
  add_locked(std::move(machine));
}

Status Feasibility::load(store::Store& store) {
  auto workers = store.list_workers();
  if (!workers) return workers.error();
  for (const auto& w : *workers) {
    if (w.state == store::WorkerState::gone) continue;
    add_worker(w.id, w.name, w.capabilities);
  }
  return {};
}

void Feasibility::add_worker(int64_t id, const std::string& name, const WorkerCapabilities& caps) {
  if (caps.instance) return;  // a cloud instance's or a Slurm job's worker: its offer or partition is counted already
  scheduler::Machine m;
  m.name = "worker " + std::to_string(id) + " (" + name + ")";
  m.gang_machines = 1;
  m.containers = {!caps.containers.empty(), caps.mounts};
  if (caps.gpus.empty()) {
    m.gpu = cost::find_gpu("cpu");
    m.gpu_name = "cpu";
    m.memory_gib = static_cast<double>(caps.memory_mb) / 1024.0;
  } else {
    // Devices of the first GPU's variant (a machine with mixed GPUs offers its first kind).
    m.gpu = caps.gpus.front().identity();
    m.gpu_name = caps.gpus.front().model;
    m.gpu_count = 0;
    for (const auto& g : caps.gpus)
      if (g.identity() == m.gpu && (m.gpu || g.model == m.gpu_name)) ++m.gpu_count;
    m.memory_gib = static_cast<double>(caps.gpus.front().memory_mb) / 1024.0;
  }
  MutexLock lock(mu_);
  add_locked(std::move(m));
}

Status Feasibility::check(const train::JobSpec& spec) const {
  const scheduler::Job job = scheduler::job_from_spec("", spec, train::model_stats(spec), 0);
  std::vector<scheduler::Machine> machines;
  {
    MutexLock lock(mu_);
    machines.reserve(machines_.size());
    for (const auto& [key, m] : machines_) machines.push_back(m);
  }
  return scheduler::check_feasible(job, machines);
}

}  // namespace jobctl::daemon::jobs
