// How a lease's program becomes a container run (docs/job-protocol.md, "Jobs in an image"): the
// job's folder bound at the same path it has on the worker (so JOBCTL_CHECKPOINT_DIR,
// JOBCTL_OUTPUT_DIR, JOBCTL_RESUME_FROM and the working directory mean the same inside and out),
// the spec's mounts under the prefixes the operator allows, the leased GPUs and only those, the
// job's user, memory and process limits, and the host's network only for a gang's rendezvous.
//
// Thread safety: functions; what the machine offers is read from the paths in HostGpuFiles.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "base/expected.h"
#include "protocol/worker_messages.h"
#include "train/spec/allowed_mounts.h"
#include "worker/container_runtime.h"
#include "worker/host_gpu_files.h"
#include "worker/job_program.h"
#include "worker/runner_options.h"

namespace jobctl::worker {

struct ContainerGpus {
  std::vector<std::string> devices;
  std::vector<ContainerBind> binds;
};

// The GPUs `indices` (the worker's numbering, nvidia-smi's) as the container gets them: CDI names
// where the host has an NVIDIA CDI spec, else their device nodes, the driver's control nodes that
// exist, and its libraries and nvidia-smi read-only. Errors: a leased GPU without a device node.
Expected<ContainerGpus> container_gpus(const std::vector<int>& indices, const HostGpuFiles& host);

// The spec's mounts as binds: each source must exist as a folder or file and, with links
// followed, lie under a prefix of `allowed` (writable only where that prefix allows writes); no
// target may cover the job's folder `job_dir` or lie inside it. Errors name the mount.
Expected<std::vector<ContainerBind>> mount_binds(const std::vector<train::MountSpec>& mounts,
                                                 const std::vector<train::AllowedMount>& allowed,
                                                 const std::filesystem::path& job_dir);

// The container's name for a lease: "jobctl-job-<id>-lease-<epoch>" (-rank-N for a gang's node N > 0).
std::string container_name(int64_t job_id, int64_t epoch, int rank);

// The whole run. `env`: the job protocol's environment as a plain process would get it
// ("NAME=value" set, "NAME" removed); only the set ones go in, with CUDA_VISIBLE_DEVICES renumbered
// for the container's own GPUs. `user`: the program's uid and gid (none: the image's user).
Expected<ContainerRun> container_run(int64_t job_id, int64_t epoch, const JobProgram& program,
                                     const RunnerOptions& options, const std::filesystem::path& dir,
                                     const std::vector<std::string>& env,
                                     const std::optional<protocol::GangRendezvous>& gang,
                                     const std::optional<std::pair<uint32_t, uint32_t>>& user);

// The container an attempt runs in: ended and removed when this goes (its runtime process may have
// been killed while the container ran on). Belongs to the runner's thread.
class RunningContainer {
 public:
  RunningContainer(std::shared_ptr<ContainerRuntime> runtime, std::string name, std::ostream& log)
      : runtime_(std::move(runtime)), name_(std::move(name)), log_(log) {}
  RunningContainer(const RunningContainer&) = delete;
  RunningContainer& operator=(const RunningContainer&) = delete;
  ~RunningContainer();
  const std::string& name() const { return name_; }

 private:
  std::shared_ptr<ContainerRuntime> runtime_;
  std::string name_;
  std::ostream& log_;
};

// Removes every container labelled with this worker's work folder: at start the worker holds no
// lease, so any such container is left from before a restart (its runtime process died with the
// worker while the container ran on). Returns how many were removed.
int remove_leftover_containers(ContainerRuntime& runtime, const std::string& work_dir, std::ostream& log);

}  // namespace jobctl::worker
