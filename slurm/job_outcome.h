// What a Slurm job's state means for the jobctl job it runs (docs/slurm.md "What jobctld
// watches"): each Slurm job runs one jobctl job once, so Slurm requeueing it (a preemption,
// `scontrol requeue`, a node failure) ends it from jobctl's point of view just as a cancel or the
// time limit does. The worker inside got SIGTERM in each case and has checkpointed and handed its
// job back; jobctld records why, cancels the requeued Slurm job (it would otherwise run again,
// after Slurm's BeginTime delay of about two minutes, for a job that may be placed elsewhere by
// then) and placement chooses again.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <string>

#include "slurm/slurm_json.h"

namespace jobctl::slurm {

enum class Phase { queued, running, ended };

struct Outcome {
  Phase phase = Phase::queued;
  // Set once ended: the job event jobctld records ("slurm_completed", "slurm_failed",
  // "slurm_cancelled", "slurm_time_limit", "slurm_preempted", "slurm_requeued",
  // "slurm_node_failure", "slurm_ended") and a sentence for people.
  std::string event;
  std::string reason;
  // Requeued by Slurm and still in its queue (or still ending): jobctld must cancel it.
  bool requeued = false;
};

// `restarts_at_launch`: the job's restart count when jobctld submitted it (0); more than that
// means Slurm requeued it since.
Outcome outcome_of(const SlurmJob& job, int restarts_at_launch = 0);

}  // namespace jobctl::slurm
