// The configured Slurm partitions as placement sees them (docs/slurm.md, "Partitions" and "Queue
// wait"): each a pool of owned GPUs of its configured model, with the queue wait Slurm's own queue
// gives a job of 1, 2, ... GPUs (one node's worth).
//
// The cluster is read (`sinfo --json`, `squeue --json`) every slurm.poll_s on a thread of its own,
// never on the placement thread: a command may take up to slurm.timeout_s when the controller is
// slow or gone, and a placement pass must not wait for it. Placement reads the last snapshot. A
// configured partition the cluster does not report, or whose nodes are all unusable, is left out
// (nothing could run there); when the cluster cannot be read at all the last snapshot stands and
// the failure is logged as every background pass's is (base/pass_log.h), recovery included.
//
// Ownership and thread safety: borrows the clock and the log (both outlive this object). snapshot() and poll()
// are safe from any thread; start() and stop() from the owner's thread (stop() also runs in the
// destructor).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/pass_log.h"
#include "base/ticker.h"
#include "daemon/slurm/slurm_config.h"
#include "scheduler/feasibility.h"
#include "scheduler/local_capacity.h"
#include "slurm/slurm_commands.h"

namespace jobctl::daemon::slurm {

// The partitions placement offers, from what the cluster reported at `now_s` (pure, for tests).
std::vector<scheduler::LocalCapacity::Partition> partitions_for_placement(
    const SlurmSettings& settings, const std::vector<::jobctl::slurm::SlurmNode>& nodes,
    const std::vector<::jobctl::slurm::SlurmJob>& jobs, int64_t now_s);

// One machine per configured partition for refusing at submit what nothing could run
// (daemon/jobs/feasibility.h): a node of it, with the GPUs `read` reports for it, or the
// configured model and count (at least one) when the cluster did not report it.
std::vector<scheduler::Machine> feasibility_machines(const SlurmSettings& settings,
                                                     const std::vector<scheduler::LocalCapacity::Partition>& read);

class SlurmPartitions {
 public:
  SlurmPartitions(const SlurmSettings& settings, const Clock& clock, Log& log = stderr_log());
  ~SlurmPartitions() { stop(); }
  SlurmPartitions(const SlurmPartitions&) = delete;
  SlurmPartitions& operator=(const SlurmPartitions&) = delete;

  // Reads the cluster once (so the first placement pass sees the partitions; this blocks for up to
  // slurm.timeout_s when the controller does not answer), then every poll_s on a thread of its
  // own. A cluster that cannot be read is not an error here: it is logged and polled again.
  void start();
  void stop();

  // Reads the cluster now and replaces the snapshot. Errors: the commands' (the snapshot stays;
  // the periodic reads log them, this call does not).
  Status poll() JOBCTL_EXCLUDES(mu_);
  // The last reading, less the partitions set aside until later than now.
  std::vector<scheduler::LocalCapacity::Partition> snapshot() const JOBCTL_EXCLUDES(mu_);
  // Leaves `partition` out of the snapshots until `until_ms` (the clock's time): jobctld could not
  // get a worker running there (sbatch refused, or batch jobs failing before their worker took
  // the job), so placement chooses elsewhere for that long. Any thread.
  void set_aside(const std::string& partition, int64_t until_ms) JOBCTL_EXCLUDES(mu_);

 private:
  const SlurmSettings settings_;
  const Clock& clock_;
  const ::jobctl::slurm::SlurmCommands commands_;
  Log& log_;
  PassLog poll_log_{"slurm: reading the cluster"};

  mutable Mutex mu_;
  std::vector<scheduler::LocalCapacity::Partition> snapshot_ JOBCTL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> set_aside_until_ JOBCTL_GUARDED_BY(mu_);  // partition -> until (ms)
  std::optional<Ticker> ticker_;  // the owner's thread only
};

}  // namespace jobctl::daemon::slurm
