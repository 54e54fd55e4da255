// Which owned GPUs are free, indexed for placement: workers are grouped into pools of identical
// machines (GPU model, GPU count, memory); a job takes `gpus` GPUs of one worker. Each pool keeps
// the workers with a free GPU and, ordered by the first GPU to free, those with none, so "is a GPU
// free?" and "how long until one is?" are O(1); for a job of several GPUs the pool's workers are
// scanned.
//
// The expected queue wait of a pool for a job of k GPUs is the earliest time some worker of it has
// k free, its held GPUs freeing at their jobs' expected ends (0 once that time has passed: a job is
// overrunning its estimate).
//
// Slurm partitions (docs/slurm.md) are owned GPUs too, behind a batch queue that Slurm runs: each
// is listed with its queue wait per GPU count as Slurm's own queue gives it (daemon/slurm/),
// never acquired here (Slurm, not jobctld, decides which node runs the job).
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
    bool runs_commands = false;                        // its workers run command jobs
    ContainerSupport containers;                       // and jobs in an image, with these mounts
    std::vector<uint32_t> free;                        // workers with a free GPU
    std::set<std::pair<int64_t, uint32_t>> busy;       // workers with none: (first GPU to free, worker)
    std::vector<uint32_t> members;                     // every worker of the pool
    size_t workers = 0;
  };

  // A Slurm partition: one GPU model, a job on one node of it.
  struct Partition {
    std::string name;
    std::string gpu_model;
    int gpus_per_node = 0;
    double gpu_memory_gb = 0;
    std::vector<double> wait_hours;  // [k - 1]: until a job of k GPUs would start (k > size: never)
    int tasks_per_node = 1;          // nodes of one gang a Slurm node runs side by side
    int machines = 1;                // nodes one gang may take: usable Slurm nodes x tasks_per_node
  };

  LocalCapacity() = default;
  explicit LocalCapacity(std::vector<Worker> workers);

  // Adds a worker (busy or free as its fields say); returns its index.
  uint32_t add_worker(Worker w);

  std::span<const Pool> pools() const { return pools_; }
  void add_partition(Partition p) { partitions_.push_back(std::move(p)); }
  std::span<const Partition> partitions() const { return partitions_; }
  const Worker& worker(uint32_t index) const { return workers_[index]; }
  size_t worker_count() const { return workers_.size(); }
  uint32_t pool_of(uint32_t worker) const { return pool_of_[worker]; }

  // GPUs of a worker no job holds.
  int free_gpus(uint32_t worker) const;
  // Whether a worker of the pool has `gpus` GPUs free now.
  bool has_free(size_t pool, int gpus = 1) const;
  double expected_wait_hours(size_t pool, int64_t now_ms, int gpus = 1) const;

  // Takes `gpus` GPUs of one worker of the pool until busy_until_ms; nullopt when no worker has
  // that many free.
  std::optional<uint32_t> acquire(size_t pool, int64_t busy_until_ms, int gpus = 1);
  // Frees every GPU of a worker (no-op when none is held).
  void release(uint32_t worker);
  // A worker's jobs' new expected finish, for all its held GPUs (from progress reports).
  void update_busy_until(uint32_t worker, int64_t busy_until_ms);
  // The earliest expected finish over all busy workers, for a caller that releases by time.
  std::optional<std::pair<int64_t, uint32_t>> earliest_busy() const;

 private:
  uint32_t pool_for(const Worker& w);
  // Files the worker under its pool's free list or busy set as its held GPUs say.
  void file(uint32_t worker);
  void unfile(uint32_t worker);

  std::vector<Worker> workers_;
  std::vector<uint32_t> pool_of_;
  std::vector<Pool> pools_;
  std::vector<Partition> partitions_;
};

}  // namespace jobctl::scheduler
