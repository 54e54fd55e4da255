// How jobctld reaches a Slurm cluster: the client commands (sbatch, squeue, sinfo, scancel,
// scontrol) on its own host, which must be a submit host of the cluster (docs/slurm.md "How
// jobctld reaches the cluster" says why commands rather than slurmrestd).
//
// Each call runs one command (process/run.h: no shell, its arguments as they are) with SLURM_CONF
// set when configured, and a timeout; it reads JSON (`--json`) where Slurm offers it. A command
// that fails is an error quoting its last line of stderr: unavailable when the controller cannot
// be reached or the command is not installed (retry later), invalid_argument when Slurm refuses
// the request (a bad partition, a GRES the partition lacks), timeout.
//
// Thread safety: no state besides the options; every method is safe from any thread. Calls block
// for up to the timeout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/expected.h"
#include "slurm/batch_job.h"
#include "slurm/slurm_json.h"

namespace jobctl::slurm {

struct SlurmCommandsOptions {
  std::string bin_dir;     // folder of sbatch, squeue, ... (empty: found on PATH)
  std::string conf_file;   // SLURM_CONF for them (empty: the host's own, /etc/slurm/slurm.conf)
  int timeout_s = 30;      // per command
};

class SlurmCommands {
 public:
  explicit SlurmCommands(SlurmCommandsOptions options);

  // sbatch: the new Slurm job's id. Errors: invalid_argument (the job does not validate, or
  // Slurm refuses it), unavailable, timeout.
  Expected<int64_t> submit(const BatchJob& job) const;
  // scancel. A job Slurm no longer knows, or one already ended, is not an error (the goal holds).
  Status cancel(int64_t job_id) const;
  // scontrol requeue: ends the job's run and queues it again (what an operator or a node
  // failure does; tests use it).
  Status requeue(int64_t job_id) const;
  // squeue --json --states=all: every job the controller still reports (ended ones for
  // MinJobAge seconds after they end).
  Expected<std::vector<SlurmJob>> jobs() const;
  // sinfo --json: the nodes, with their partitions and GRES.
  Expected<std::vector<SlurmNode>> nodes() const;

  const SlurmCommandsOptions& options() const { return options_; }

 private:
  struct Output {
    std::string out;
    std::string err;
  };
  // Runs `program args...`; Errors as in the header comment, naming `program`.
  Expected<Output> run(const std::string& program, const std::vector<std::string>& args) const;

  SlurmCommandsOptions options_;
};

}  // namespace jobctl::slurm
