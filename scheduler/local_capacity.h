// Which owned workers are free, indexed for placement: workers are grouped into pools of identical
// machines (GPU model, GPU count, memory); each pool keeps a free list and its busy workers ordered
// by expected finish, so "is one free?" and "how long until one is?" are O(1) and taking or
// returning a worker is O(log n).
//
// The expected queue wait of a pool with no free worker is the time until its first busy worker
// is expected to finish (0 once that time has passed: the job is overrunning its estimate).
//
// Thread safety: none; the owner serialises access.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/worker.h"

namespace jobctl::scheduler {

class LocalCapacity {
 public:
  struct Pool {
    std::string gpu_model;
    int gpu_count = 1;
    double gpu_memory_gb = 0;
    std::vector<uint32_t> free;                        // worker indices
    std::set<std::pair<int64_t, uint32_t>> busy;       // (busy_until_ms, worker index)
    size_t workers = 0;
  };

  LocalCapacity() = default;
  explicit LocalCapacity(std::vector<Worker> workers);

  // Adds a worker (busy or free as its fields say); returns its index.
  uint32_t add_worker(Worker w);

  std::span<const Pool> pools() const { return pools_; }
  const Worker& worker(uint32_t index) const { return workers_[index]; }
  size_t worker_count() const { return workers_.size(); }
  uint32_t pool_of(uint32_t worker) const { return pool_of_[worker]; }

  bool has_free(size_t pool) const { return !pools_[pool].free.empty(); }
  double expected_wait_hours(size_t pool, int64_t now_ms) const;

  // Takes a free worker of the pool until busy_until_ms; nullopt when none is free.
  std::optional<uint32_t> acquire(size_t pool, int64_t busy_until_ms);
  // Returns a busy worker to its pool's free list (no-op when it is free already).
  void release(uint32_t worker);
  // A busy worker's new expected finish (from its progress reports).
  void update_busy_until(uint32_t worker, int64_t busy_until_ms);
  // The earliest expected finish over all busy workers, for a caller that releases by time.
  std::optional<std::pair<int64_t, uint32_t>> earliest_busy() const;

 private:
  uint32_t pool_for(const Worker& w);

  std::vector<Worker> workers_;
  std::vector<uint32_t> pool_of_;
  std::vector<Pool> pools_;
};

}  // namespace jobctl::scheduler
