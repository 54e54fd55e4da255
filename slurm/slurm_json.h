// Slurm's own view of its jobs and nodes, read from `squeue --json` and `sinfo --json` (the
// commands jobctld runs: docs/slurm.md "How jobctld reaches the cluster").
//
// The JSON is Slurm's OpenAPI data model, whose shape moved between releases; the reader accepts
// both forms it has had:
//   - 22.05 / 23.02 (openapi v0.0.38/39): numbers are plain ("time_limit": 2), "job_state" is a
//     string ("RUNNING"), "exit_code" a number;
//   - 23.11 and later (v0.0.40+): numbers are {"set": true, "infinite": false, "number": 2},
//     "job_state" is a list (["PENDING", "REQUEUED"]), "exit_code" an object with "return_code".
// Unknown keys are ignored (each release adds some); a missing key we rely on ("job_id",
// "job_state", "name" of a node) is an error naming it, so a future incompatible release fails
// loudly instead of being read as empty.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/expected.h"

namespace jobctl::slurm {

// One Slurm job as squeue reports it. Times are Unix seconds (0: not set).
struct SlurmJob {
  int64_t id = 0;
  std::string name;
  std::string comment;              // jobctld puts its tag here ("jobctl:<tag>")
  int64_t user_id = -1;             // who submitted it (-1: squeue did not say)
  std::string partition;
  std::string state;                // base state: PENDING, RUNNING, COMPLETING, COMPLETED,
                                    // CANCELLED, TIMEOUT, PREEMPTED, FAILED, NODE_FAIL, ...
  std::vector<std::string> state_flags;  // e.g. REQUEUED, COMPLETING (23.11+ lists them)
  std::string reason;               // why pending / why it ended ("BeginTime", "Resources")
  std::string nodes;                // allocated nodes ("node1"), empty while pending
  int restart_count = 0;            // times Slurm requeued it (preemption, requeue, node failure)
  int64_t submit_s = 0;
  int64_t start_s = 0;              // actual start; for a pending job Slurm's expected start
  int64_t end_s = 0;                // actual end; for a running job start + time limit
  int64_t preempt_s = 0;            // when it was last preempted (0: never)
  std::optional<int64_t> time_limit_s;  // none: unlimited
  int exit_code = 0;                // the batch script's exit code once ended; 128 + N when
                                    // signal N killed it (the shell's convention)
  int gpus = 0;                     // GPUs asked for (--gres gpu[:type]:N per node, --gpus N)
  std::string gpu_type;             // the GRES type asked for ("a100"), empty for any
  int node_count = 1;
  int64_t priority = 0;

  // Pending in the queue (the REQUEUED flag included: it waits to run again).
  bool pending() const { return state == "PENDING" || state == "REQUEUED" || state == "REQUEUE_HOLD"; }
  // Holds or is releasing its allocation (RUNNING, COMPLETING, SUSPENDED, CONFIGURING, ...).
  bool running() const;
  // Has ended for good (completed, failed, cancelled, timed out, ...).
  bool ended() const { return !pending() && !running(); }
};

// One node as sinfo reports it.
struct SlurmNode {
  std::string name;
  std::string state;                // idle, mixed, allocated, down, drained, ... (lower case)
  std::vector<std::string> partitions;
  int cpus = 0;
  int gpus = 0;                     // GPUs in its GRES ("gpu:a100:4" -> 4)
  std::string gpu_type;             // "a100" (empty: GRES without a type)
  // Can run jobs now or soon (not down, drained, failed or in maintenance).
  bool usable() const;
};

// A GRES or TRES list's GPUs: "gpu:a100:4(S:0-1)", "gpu:2", "gres:gpu:fake:1",
// "gres/gpu:a100=2", "gpu:a100:2,gpu:v100:2,mps:100" (the first GPU type named wins; counts
// add up). {0, ""} when it names no GPU.
struct GpuRequest {
  int count = 0;
  std::string type;
};
GpuRequest parse_gpu_gres(std::string_view gres);

// `squeue --json` (any filters; the caller selects). Errors: malformed_json, invalid_argument
// naming "squeue.jobs[3].job_id".
Expected<std::vector<SlurmJob>> parse_squeue_json(std::string_view text);

// Whether `job` is one of the Slurm jobs a jobctld running as `uid` submitted: it carries that
// jobctld's `comment` ("jobctl:<tag>") and `uid` submitted it. Any user may put the comment on a
// job of their own; squeue lists every user's jobs.
inline bool submitted_by(const SlurmJob& job, const std::string& comment, int64_t uid) {
  return job.comment == comment && job.user_id == uid;
}
// `sinfo --json`. Errors as above ("sinfo.nodes[0].name").
Expected<std::vector<SlurmNode>> parse_sinfo_json(std::string_view text);
// `sbatch --parsable`: "1234" or "1234;cluster". Errors: invalid_argument.
Expected<int64_t> parse_sbatch_parsable(std::string_view text);

}  // namespace jobctl::slurm
