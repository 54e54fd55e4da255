#include "scheduler/local_capacity.h"

#include <algorithm>
#include <cmath>

namespace jobctl::scheduler {

LocalCapacity::LocalCapacity(std::vector<Worker> workers) {
  for (auto& w : workers) add_worker(std::move(w));
}

uint32_t LocalCapacity::pool_for(const Worker& w) {
  for (size_t i = 0; i < pools_.size(); ++i) {
    const Pool& p = pools_[i];
    if (p.gpu_model == w.gpu_model && p.gpu_count == w.gpu_count && p.runs_commands == w.runs_commands &&
        p.containers == w.containers &&
        std::abs(p.gpu_memory_gb - w.gpu_memory_gb) < 0.5)
      return static_cast<uint32_t>(i);
  }
  Pool p;
  p.gpu_model = w.gpu_model;
  p.gpu_count = w.gpu_count;
  p.gpu_memory_gb = w.gpu_memory_gb;
  p.runs_commands = w.runs_commands;
  p.containers = w.containers;
  pools_.push_back(std::move(p));
  return static_cast<uint32_t>(pools_.size() - 1);
}

uint32_t LocalCapacity::add_worker(Worker w) {
  const uint32_t index = static_cast<uint32_t>(workers_.size());
  const uint32_t pool = pool_for(w);
  w.gpu_count = std::max(w.gpu_count, 1);
  if (w.busy) w.held_until.assign(static_cast<size_t>(w.gpu_count), w.busy_until_ms);  // the whole machine
  if (w.held_until.size() > static_cast<size_t>(w.gpu_count)) w.held_until.resize(static_cast<size_t>(w.gpu_count));
  std::sort(w.held_until.begin(), w.held_until.end());
  Pool& p = pools_[pool];
  p.workers += 1;
  p.members.push_back(index);
  workers_.push_back(std::move(w));
  pool_of_.push_back(pool);
  file(index);
  return index;
}

int LocalCapacity::free_gpus(uint32_t w) const {
  const Worker& worker = workers_[w];
  return std::max(0, worker.gpu_count - static_cast<int>(worker.held_until.size()));
}

void LocalCapacity::file(uint32_t w) {
  Worker& worker = workers_[w];
  Pool& p = pools_[pool_of_[w]];
  worker.busy = free_gpus(w) == 0;
  worker.busy_until_ms = worker.held_until.empty() ? 0 : worker.held_until.back();
  if (worker.busy)
    p.busy.emplace(worker.held_until.front(), w);
  else
    p.free.push_back(w);
}

void LocalCapacity::unfile(uint32_t w) {
  Worker& worker = workers_[w];
  Pool& p = pools_[pool_of_[w]];
  if (worker.busy)
    p.busy.erase({worker.held_until.front(), w});
  else
    std::erase(p.free, w);
}

bool LocalCapacity::has_free(size_t pool, int gpus) const {
  const Pool& p = pools_[pool];
  if (gpus <= 1) return !p.free.empty();
  for (uint32_t w : p.free)
    if (free_gpus(w) >= gpus) return true;
  return false;
}

double LocalCapacity::expected_wait_hours(size_t pool, int64_t now_ms, int gpus) const {
  const Pool& p = pools_[pool];
  if (has_free(pool, gpus)) return 0.0;
  std::optional<int64_t> earliest;
  if (gpus <= 1) {
    if (!p.busy.empty()) earliest = p.busy.begin()->first;
  } else {
    // For each worker that could ever hold the job, when its k-th GPU frees.
    for (uint32_t w : p.members) {
      const Worker& worker = workers_[w];
      if (worker.gpu_count < gpus) continue;
      const size_t need = static_cast<size_t>(gpus - free_gpus(w));  // held GPUs that must free first
      const int64_t at = worker.held_until[need - 1];
      if (!earliest || at < *earliest) earliest = at;
    }
  }
  if (!earliest) return 0.0;
  return std::max<int64_t>(0, *earliest - now_ms) / 3.6e6;
}

std::optional<uint32_t> LocalCapacity::acquire(size_t pool, int64_t busy_until_ms, int gpus) {
  Pool& p = pools_[pool];
  gpus = std::max(gpus, 1);
  std::optional<uint32_t> pick;
  for (auto it = p.free.rbegin(); it != p.free.rend(); ++it)
    if (free_gpus(*it) >= gpus) {
      pick = *it;
      break;
    }
  if (!pick) return std::nullopt;
  unfile(*pick);
  Worker& worker = workers_[*pick];
  worker.held_until.insert(worker.held_until.end(), static_cast<size_t>(gpus), busy_until_ms);
  std::sort(worker.held_until.begin(), worker.held_until.end());
  file(*pick);
  return pick;
}

void LocalCapacity::release(uint32_t w) {
  Worker& worker = workers_[w];
  if (worker.held_until.empty()) return;
  unfile(w);
  worker.held_until.clear();
  file(w);
}

void LocalCapacity::update_busy_until(uint32_t w, int64_t busy_until_ms) {
  Worker& worker = workers_[w];
  if (worker.held_until.empty()) return;
  unfile(w);
  std::fill(worker.held_until.begin(), worker.held_until.end(), busy_until_ms);
  file(w);
}

std::optional<std::pair<int64_t, uint32_t>> LocalCapacity::earliest_busy() const {
  std::optional<std::pair<int64_t, uint32_t>> best;
  for (const Pool& p : pools_) {
    if (!p.busy.empty() && (!best || *p.busy.begin() < *best)) best = *p.busy.begin();
  }
  return best;
}

}  // namespace jobctl::scheduler
