// One jobctl job as one Slurm batch job (docs/slurm.md "The batch job"): the sbatch options that
// ask for its GPUs through GRES, bound its run time by the job's estimate with a margin, and ask
// Slurm to signal the batch process before the time limit so the worker checkpoints in time.
//
//   sbatch --parsable --job-name=jobctl-job-12 --comment=jobctl:<tag> --partition=gpu
//          --nodes=1 --ntasks=1 --gres=gpu:a100:1 --time=47 --signal=B:TERM@120
//          --requeue --output=... --wrap='exec <command>'
//
// `--signal=B:TERM@120`: 120 s before the time limit Slurm sends SIGTERM to the batch shell only
// (B:), which is the worker itself (`exec`): it checkpoints, uploads and hands the job back.
// Slurm sends that signal up to 60 s early (its event resolution), so the lead must cover the
// checkpoint upload plus a minute. A preemption, `scontrol requeue` and `scancel` send SIGTERM
// to the whole job and SIGKILL KillWait seconds later (the cluster's setting, 30 s by default):
// the worker's checkpoint has that long.
//
// A gang of N nodes is one batch job of N tasks, one worker each, started by `srun` from the batch
// shell: `--nodes=ceil(N / k) --ntasks=N --ntasks-per-node=k`, where k (tasks_per_node) is 1 on a
// real cluster (one machine per node) and more where one node stands in for several; --gres asks
// for k nodes' GPUs on each Slurm node. Its time-limit signal is `--signal=TERM@lead` (no B:):
// Slurm sends it to every task, so each node's worker stops its program at once (the batch shell
// is only srun waiting).
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/expected.h"

namespace jobctl::slurm {

struct BatchJob {
  std::string name;               // --job-name
  std::string comment;            // --comment: "jobctl:<tag>", how jobctld finds its own jobs
  std::string partition;          // --partition
  int gpus = 0;                   // GPUs per task: --gres=gpu[:type]:N x the tasks on a node (0: no GPU asked for)
  std::string gpu_type;           // the GRES type ("a100"); empty: any GPU of the partition
  int cpus = 0;                   // --cpus-per-task (0: the partition's default)
  int tasks = 1;                  // --ntasks: a gang's nodes (the command runs under srun, once per task)
  int tasks_per_node = 1;         // --ntasks-per-node, at most: tasks sharing a Slurm node
  int64_t time_limit_s = 0;       // --time, rounded up to whole minutes (Slurm's unit)
  int signal_lead_s = 120;        // --signal=B:TERM@lead
  std::string account;            // --account (optional)
  std::string qos;                // --qos (optional)
  std::string output;             // --output on the node (default: Slurm's, slurm-%j.out in the
                                  // submit folder)
  std::vector<std::string> extra; // more sbatch options, as they are ("--constraint=ib")
  std::string command;            // the shell command the job runs (`exec`ed by the batch shell)
};

// Checks what sbatch would otherwise reject late or misread: a name and command, 0..64 GPUs per
// node, 1..64 tasks and tasks per node, a
// time limit of 1 minute to 365 days, a lead shorter than the limit and at most 65535 s
// (Slurm's maximum), no newline in any option. Errors: invalid_argument naming the field
// ("slurm.signal_lead_s").
Status validate(const BatchJob& job);

// The Slurm nodes a job of `tasks` tasks, at most `tasks_per_node` on one node, asks for.
int nodes_for(int tasks, int tasks_per_node);

// The sbatch arguments after the program name (each one argument, unquoted).
std::vector<std::string> sbatch_arguments(const BatchJob& job);

// The time limit for a job whose runtime is estimated at `estimate_s`: the estimate plus
// `margin` of it (0.5: half again), plus the signal lead (the checkpoint happens inside the
// limit), plus `startup_s` (the worker starting, downloading its checkpoint), rounded up to whole
// minutes. At least one minute.
int64_t time_limit_for(double estimate_s, double margin, int signal_lead_s, int startup_s);

// Slurm's --time form: whole minutes ("47"), or "D-HH:MM:SS" from a day up ("1-02:00:00").
std::string slurm_time(int64_t seconds);

}  // namespace jobctl::slurm
