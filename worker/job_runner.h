// Runs one leased job: writes its spec to a file, runs its program as a child process —
// jobctl-train for a built-in model (docs/train-cli.md), the spec's command for a command job —
// and follows the job protocol (docs/job-protocol.md): reads its JSON lines, uploads the
// checkpoints it announces, heartbeats progress to jobctld, obeys cancel and the
// worker's own stop request, and reports the outcome (complete, fail, or preempt when the worker
// is stopping).
//
// Heartbeats go out every heartbeat interval and at once on the trainer's `start` and at each
// epoch end. A heartbeat answered {"cancel": true} stops the trainer (SIGTERM, then SIGKILL after
// kill_grace_ms); one refused with 409 or 404 means the lease was lost (the daemon gave the job
// to someone else): the trainer is stopped and nothing is reported. A heartbeat that cannot be
// delivered is retried at the next interval while the trainer keeps going. The final reports and
// the checkpoint downloads retry with backoff; a stop of the worker ends their pauses, except for
// the preempt report, which the stop itself sends.
//
// A leased job that has checkpoints resumes from the newest; when the program refuses it (an
// `error` line with resume_refused before it starts, docs/job-protocol.md) or its download is corrupt, the worker rejects it (the daemon
// deletes it and records a `checkpoint_rejected` event) and tries the previous one, then a fresh
// start; the job is reported failed only when the fresh start fails (docs/recovery.md).
//
// Ownership and thread safety: borrows the ApiClient and the StopSource; run() on one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/retry.h"
#include "client/api_client.h"
#include "process/child.h"
#include "worker/checkpoint_transfer.h"
#include "worker/stop_source.h"

namespace jobctl::worker {

struct RunnerOptions {
  std::string trainer;             // path of jobctl-train
  std::string work_dir;            // jobs run in <work_dir>/job-<id>-lease-<epoch>
  std::string device = "auto";     // passed to jobctl-train --device
  std::string data_dir;            // passed as --data-dir when not empty
  int heartbeat_interval_ms = 2000;
  int kill_grace_ms = 30000;       // after SIGTERM, how long before SIGKILL, unless the spec's checkpoint.grace_s says
  int log_every = 10;              // jobctl-train --log-every
  bool keep_work_dirs = false;     // keep a succeeded job's folder (failed ones are always kept)
  bool allow_commands = false;     // run command jobs (--allow-commands); without it they fail here
  int threads = 0;                 // jobctl-train --threads (0: its default, all cores)
  std::vector<int> gpu_indices;    // the job sees only these GPUs (CUDA_VISIBLE_DEVICES); empty: all
  TransferOptions transfer;        // checkpoint uploads and downloads (server filled by the agent)
  std::optional<process::Credentials> run_as;  // job programs run as this user (--run-as); nullopt: the worker's
  std::string cgroup_parent;       // each run's cgroup v2 goes under this folder; empty: none (worker/job_containment.h)
};

// The program a lease runs and how: jobctl-train for a built-in model's spec, the spec's command
// for a command job. Both speak the job protocol (docs/job-protocol.md) and run through the same
// code; only what is started differs.
struct JobProgram {
  std::vector<std::string> argv;
  std::vector<std::string> env;      // the spec's env (NAME=value)
  std::filesystem::path cwd;         // the job's folder (jobctl-train) or its work/ (a command)
  std::string label;                 // for messages: "jobctl-train" or the command's program
  bool command = false;
  std::string bundle;                // a command job's code bundle (SHA-256), unpacked into cwd
  uint64_t memory_limit_bytes = 0;   // RLIMIT_AS from resources.memory_mb; 0: none
  int grace_ms = 30000;              // after SIGTERM, how long before SIGKILL (checkpoint.grace_s)
};

struct Lease {
  int64_t job_id = 0;
  int64_t epoch = 0;
  std::string name;
  std::string spec_json;
  std::optional<StoredCheckpoint> resume;  // the newest stored checkpoint, when the job has one
  std::vector<int> gpus;                   // the worker's GPUs the job takes (the daemon names them)
};

enum class RunOutcome { succeeded, failed, cancelled, lease_lost, released };
const char* to_string(RunOutcome o);

class JobRunner {
 public:
  JobRunner(client::ApiClient& api, int64_t worker_id, RunnerOptions options,
            const StopSource& stop, std::ostream& log);

  RunOutcome run(const Lease& lease);

  // Builds a Lease from the daemon's answer to POST /v1/workers/{id}/lease.
  static Lease lease_from_json(const nlohmann::json& j);

 private:
  // The checkpoints to try to resume from, newest first (none: the lease names none).
  std::vector<StoredCheckpoint> resume_candidates(const Lease& lease, CheckpointTransfer& transfer);
  // Downloads the first candidate that is intact into `out_dir` (a corrupt one is rejected, one
  // that cannot be fetched now is skipped) and drops the candidates before it; `step` is set to
  // its step. nullopt: none left, start from scratch.
  std::optional<std::string> next_resume(const Lease& lease, CheckpointTransfer& transfer,
                                         std::vector<StoredCheckpoint>& candidates, const std::string& out_dir,
                                         int64_t& step);
  // Tells the daemon the first candidate cannot be resumed from (it deletes it and records an
  // event naming the fallback: the next candidate, or a fresh start) and drops it.
  void reject_checkpoint(const Lease& lease, std::vector<StoredCheckpoint>& candidates, const std::string& why);
  // Runs the trainer once (resuming from `resume_path` when set) and reports the outcome. When
  // the trainer refuses that checkpoint, nothing is reported: `resume_refused` gets its message.
  RunOutcome attempt(const Lease& lease, const std::filesystem::path& dir,
                     const std::optional<std::string>& resume_path, std::string& resume_refused);
  RunOutcome fail_job(const Lease& lease, const std::string& why);
  // What the lease runs (`spec_path`: where its spec was written). Errors: forbidden (a command
  // job on a worker without --allow-commands), invalid_argument (a malformed command).
  Expected<JobProgram> program_for(const Lease& lease, const std::filesystem::path& spec_path) const;
  // Sends a final report, retrying transport failures a few times (base/retry.h), pausing in
  // `wait`.
  void report(const std::string& what, int64_t job_id, const std::function<Expected<nlohmann::json>()>& send,
              const RetryWait& wait);
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
