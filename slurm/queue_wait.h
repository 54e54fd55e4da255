// How long a new job would wait in a partition's queue (docs/slurm.md "Queue wait"), from what
// Slurm reports of the jobs already there: what placement adds to a partition's time to finish.
//
// The estimate replays Slurm's own plan on the partition's GPUs, pooled: each running job holds
// its GPUs until its expected end (its start plus its time limit, as Slurm computes end_time);
// each pending job, in Slurm's priority order (then submit order), takes the GPUs that free up
// first for its own time limit; the new job starts when as many GPUs as it asks for are free.
// Time limits are upper bounds (jobs usually end sooner), so the estimate errs long, as Slurm's
// own `squeue --start` does; backfill, which may start a short job sooner, is ignored.
// Running jobs of other partitions count when they run on this partition's nodes (overlapping
// partitions share GPUs); pending jobs of other partitions do not.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "slurm/partition.h"
#include "slurm/slurm_json.h"

namespace jobctl::slurm {

struct QueueWait {
  int64_t wait_s = 0;        // until a job asking for `gpus` GPUs would start
  bool fits = true;          // false: it asks for more GPUs than one node has (it never starts)
  int pending_jobs = 0;      // pending jobs of the partition ahead of it
  int running_jobs = 0;      // running jobs on the partition's nodes
  int gpus_in_use = 0;       // GPUs those hold
  int gpus = 0;              // usable GPUs of the partition
};

// `jobs`: everything squeue reported (any partition, any state); `now_s`: Unix seconds;
// `default_limit_s`: the time limit assumed for a job that has none (unlimited).
QueueWait estimate_queue_wait(const Partition& partition, const std::vector<SlurmJob>& jobs, int gpus,
                              int64_t now_s, int64_t default_limit_s);

}  // namespace jobctl::slurm
