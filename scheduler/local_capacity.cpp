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
    if (p.gpu_model == w.gpu_model && p.gpu_count == w.gpu_count &&
        std::abs(p.gpu_memory_gb - w.gpu_memory_gb) < 0.5)
      return static_cast<uint32_t>(i);
  }
  Pool p;
  p.gpu_model = w.gpu_model;
  p.gpu_count = w.gpu_count;
  p.gpu_memory_gb = w.gpu_memory_gb;
  pools_.push_back(std::move(p));
  return static_cast<uint32_t>(pools_.size() - 1);
}

uint32_t LocalCapacity::add_worker(Worker w) {
  const uint32_t index = static_cast<uint32_t>(workers_.size());
  const uint32_t pool = pool_for(w);
  Pool& p = pools_[pool];
  p.workers += 1;
  if (w.busy)
    p.busy.emplace(w.busy_until_ms, index);
  else
    p.free.push_back(index);
  workers_.push_back(std::move(w));
  pool_of_.push_back(pool);
  return index;
}

double LocalCapacity::expected_wait_hours(size_t pool, int64_t now_ms) const {
  const Pool& p = pools_[pool];
  if (!p.free.empty()) return 0.0;
  if (p.busy.empty()) return 0.0;
  return std::max<int64_t>(0, p.busy.begin()->first - now_ms) / 3.6e6;
}

std::optional<uint32_t> LocalCapacity::acquire(size_t pool, int64_t busy_until_ms) {
  Pool& p = pools_[pool];
  if (p.free.empty()) return std::nullopt;
  const uint32_t w = p.free.back();
  p.free.pop_back();
  workers_[w].busy = true;
  workers_[w].busy_until_ms = busy_until_ms;
  p.busy.emplace(busy_until_ms, w);
  return w;
}

void LocalCapacity::release(uint32_t w) {
  Worker& worker = workers_[w];
  if (!worker.busy) return;
  Pool& p = pools_[pool_of_[w]];
  p.busy.erase({worker.busy_until_ms, w});
  worker.busy = false;
  p.free.push_back(w);
}

void LocalCapacity::update_busy_until(uint32_t w, int64_t busy_until_ms) {
  Worker& worker = workers_[w];
  if (!worker.busy) return;
  Pool& p = pools_[pool_of_[w]];
  p.busy.erase({worker.busy_until_ms, w});
  worker.busy_until_ms = busy_until_ms;
  p.busy.emplace(busy_until_ms, w);
}

std::optional<std::pair<int64_t, uint32_t>> LocalCapacity::earliest_busy() const {
  std::optional<std::pair<int64_t, uint32_t>> best;
  for (const Pool& p : pools_) {
    if (!p.busy.empty() && (!best || *p.busy.begin() < *best)) best = *p.busy.begin();
  }
  return best;
}

}  // namespace jobctl::scheduler
