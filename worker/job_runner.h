// Runs one leased job: writes its spec to a file, runs its program as a child process —
// jobctl-train for a built-in model (docs/train-cli.md), the spec's command for a command job —
// and follows the job protocol (docs/job-protocol.md): reads its JSON lines, uploads the
// checkpoints it announces, heartbeats progress to jobctld, obeys cancel and the
// worker's own stop request, and reports the outcome (complete, fail, or preempt when the worker
// is stopping).
//
// One run is a sequence of small steps, each in a file of its own: the program to run
// (job_program.h), its launch (job_launch.h), the I/O loop that drains its output and watches what
// stops it (job_supervisor.h, job_stopper.h), the heartbeats on a thread of their own
// (heartbeat_sender.h: the loop never waits on jobctld), the checkpoints' hand-off to the uploader
// (checkpoint_handoff.h), and the outcome's report (job_outcome.h, lease_reporter.h).
//
// Heartbeats go out every heartbeat interval and at once on the trainer's `start` and at each
// epoch end. A heartbeat answered {"cancel": true} stops the trainer (SIGTERM, then SIGKILL after
// kill_grace_ms); one refused with 409 or 404 means the lease was lost (the daemon gave the job
// to someone else): the trainer is stopped and nothing is reported. A heartbeat that cannot be
// delivered is retried at the next interval while the trainer keeps going, its output drained. The final reports and
// the checkpoint downloads retry with backoff; a stop of the worker ends their pauses, except for
// the preempt report, which the stop itself sends.
//
// A leased job that has checkpoints resumes from the newest; when the program refuses it (an
// `error` line with resume_refused before it starts, docs/job-protocol.md) or its download is corrupt, the worker rejects it (the daemon
// deletes it and records a `checkpoint_rejected` event) and tries the previous one, then a fresh
// start; the job is reported failed only when the fresh start fails (docs/recovery.md).
//
// A job across machines (a lease with a gang; docs/job-protocol.md, "What the worker gives the
// program") runs the same way on every node, its program told the rendezvous (job_launch.h). Rank
// 0 reports for the job. A node of rank > 0 restores the stored outputs and downloads the checkpoint to resume
// from like any lease, heartbeats, and reports its own outcome under its own lease, but uploads no
// checkpoint and no output and sends no progress: its progress lines become log lines, and every
// line of its log is prefixed "[rank N] ".
//
// Ownership and thread safety: borrows the ApiClient and the StopSource; run() on one thread (it
// starts the job's heartbeat and upload threads and joins them before it returns).
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/expected.h"
#include "base/retry.h"
#include "client/api_client.h"
#include "worker/checkpoint_transfer.h"
#include "worker/heartbeat_sender.h"
#include "worker/job_outcome.h"
#include "worker/job_program.h"
#include "worker/lease_reporter.h"
#include "worker/output_sync.h"
#include "worker/runner_options.h"
#include "worker/stop_source.h"

namespace jobctl::worker {

// The lease the worker runs: the protocol's offer as it came (its registry credential is used for
// the pull, then dropped with the lease).
using Lease = protocol::LeaseOffer;

class JobRunner {
 public:
  JobRunner(client::ApiClient& api, int64_t worker_id, RunnerOptions options,
            const StopSource& stop, std::ostream& log);

  RunOutcome run(const Lease& lease);

 private:
  // The checkpoints to try to resume from, newest first (none: the lease names none).
  std::vector<StoredCheckpoint> resume_candidates(const Lease& lease, CheckpointTransfer& transfer);
  // Downloads the first candidate that is intact into `out_dir` (a corrupt one is rejected, one
  // that cannot be fetched now is skipped) and drops the candidates before it; `step` is set to
  // its step. nullopt: none left, start from scratch.
  std::optional<std::string> next_resume(const Lease& lease, LeaseReporter& reporter, CheckpointTransfer& transfer,
                                         std::vector<StoredCheckpoint>& candidates, const std::string& out_dir,
                                         int64_t& step);
  // Tells the daemon the first candidate cannot be resumed from (it deletes it and records an
  // event naming the fallback: the next candidate, or a fresh start) and drops it.
  void reject_checkpoint(LeaseReporter& reporter, std::vector<StoredCheckpoint>& candidates, const std::string& why);
  // Runs the program once (resuming from `resume_path` when set) — launch, supervise, report —
  // and returns the outcome. When the program refuses that checkpoint, nothing is reported:
  // `resume_refused` gets its message. `setup_log` (what the job's setup printed) goes first in the
  // job's log.
  RunOutcome attempt(const Lease& lease, LeaseReporter& reporter, OutputSync& outputs, const std::filesystem::path& dir,
                     const std::optional<std::string>& resume_path, std::string& resume_refused,
                     const std::vector<std::string>& setup_log);
  RunOutcome fail_job(LeaseReporter& reporter, const std::string& why);
  HeartbeatSender::Options heartbeat_options(const Lease& lease) const;
  // The pauses of this job's retries: a stop of the worker ends them.
  RetryWait stop_wait() const {
    return [this](std::chrono::milliseconds pause) { return stop_.wait_for(pause); };
  }

  client::ApiClient& api_;
  int64_t worker_id_;
  RunnerOptions options_;
  const StopSource& stop_;
  std::ostream& log_;
};

}  // namespace jobctl::worker
