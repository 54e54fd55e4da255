// Starts one attempt of a leased job's program (docs/job-protocol.md): its environment (the job
// protocol's variables, a gang's rendezvous, the GPUs it may see, never the worker's credentials),
// its folders (given to the job's user under --run-as), its containment (a cgroup of its own where
// the machine has one, else its session: worker/job_containment.h), and the child process itself
// — for a job in an image, the container runtime's foreground process (worker/container_launch.h).
//
// Thread safety: a function; the LaunchedJob it returns belongs to the runner's thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>

#include "base/expected.h"
#include "process/child.h"
#include "protocol/worker_messages.h"
#include "worker/container_launch.h"
#include "worker/job_containment.h"
#include "worker/job_program.h"

namespace jobctl::worker {

struct LaunchedJob {
  std::unique_ptr<JobContainment> containment;
  std::unique_ptr<process::Child> child;
  std::optional<int64_t> oom_kills_before;  // oom_kill_count() at the start (worker/oom_kill.h)
  // A job in an image: its container, removed when the attempt ends (child is the runtime's
  // foreground process). Null for a program run on this machine.
  std::unique_ptr<RunningContainer> container;
};

// The lease's JOBCTL_OUTPUT_DIR in the job's folder `dir` (worker/output_sync.h).
std::filesystem::path job_output_dir(const std::filesystem::path& dir);

// `dir`: the job's folder (its spec; checkpoints go to dir/out); `resume_path`: the checkpoint to
// resume from (JOBCTL_RESUME_FROM), if any; `gang`: a job across machines' rendezvous
// (JOBCTL_NODE_RANK, JOBCTL_NUM_NODES, JOBCTL_NODE_ADDRS, JOBCTL_MASTER_ADDR, JOBCTL_MASTER_PORT,
// JOBCTL_GPUS_PER_NODE), none for a job on one machine. Errors carry the message the job fails with.
Expected<LaunchedJob> launch_job(int64_t job_id, int64_t epoch, const JobProgram& program,
                                 const RunnerOptions& options, const std::filesystem::path& dir,
                                 const std::optional<std::string>& resume_path,
                                 const std::optional<protocol::GangRendezvous>& gang, std::ostream& log);

}  // namespace jobctl::worker
