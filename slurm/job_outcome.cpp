#include "slurm/job_outcome.h"

namespace jobctl::slurm {

Outcome outcome_of(const SlurmJob& j, int restarts_at_launch) {
  Outcome o;
  const std::string id = "Slurm job " + std::to_string(j.id);
  if (j.restart_count > restarts_at_launch) {
    // Requeued: COMPLETING while its processes end, then PENDING (BeginTime) to run again. The
    // run jobctld launched ended there, whatever happened to the Slurm job after (a cancel).
    o.phase = Phase::ended;
    o.requeued = !j.ended();
    // Slurm shows preempt_time only while the preempted job's processes end (COMPLETING); once
    // the job is pending again a preemption looks like any other requeue.
    if (j.preempt_s > 0) {
      o.event = "slurm_preempted";
      o.reason = id + " was preempted and requeued by Slurm";
    } else {
      o.event = "slurm_requeued";
      o.reason = id + " was requeued by Slurm (a preemption, scontrol requeue or a node failure)";
    }
    return o;
  }
  if (j.pending()) return o;
  if (j.running()) {
    o.phase = Phase::running;
    return o;
  }
  o.phase = Phase::ended;
  const std::string& s = j.state;
  if (s == "COMPLETED") {
    o.event = "slurm_completed";
    o.reason = id + " completed";
  } else if (s == "CANCELLED") {
    o.event = "slurm_cancelled";
    o.reason = id + " was cancelled (scancel)";
  } else if (s == "TIMEOUT") {
    o.event = "slurm_time_limit";
    o.reason = id + " reached its time limit";
  } else if (s == "PREEMPTED") {
    o.event = "slurm_preempted";
    o.reason = id + " was preempted";
  } else if (s == "NODE_FAIL" || s == "BOOT_FAIL") {
    o.event = "slurm_node_failure";
    o.reason = id + " ended: " + (s == "NODE_FAIL" ? "its node failed" : "its node did not boot");
  } else if (s == "FAILED" || s == "OUT_OF_MEMORY") {
    o.event = "slurm_failed";
    o.reason = id + (s == "FAILED" ? " failed (exit code " + std::to_string(j.exit_code) + ")" : " ran out of memory");
  } else if (s == "DEADLINE") {
    o.event = "slurm_cancelled";
    o.reason = id + " was cancelled: its deadline passed";
  } else {
    o.event = "slurm_ended";
    o.reason = id + " ended (" + s + ")";
  }
  return o;
}

}  // namespace jobctl::slurm
