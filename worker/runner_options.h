// How the worker runs its leased jobs (the agent fills it from jobctl-worker's flags).
//
// Thread safety: a plain value.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "process/child.h"
#include "train/spec/allowed_mounts.h"
#include "worker/checkpoint_transfer.h"
#include "worker/gang_firewall.h"
#include "worker/host_gpu_files.h"

namespace jobctl::worker {

class ContainerRuntime;  // worker/container_runtime.h
class ImageCache;        // worker/image_cache.h

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
  TransferOptions transfer;        // jobctld's URL and credentials, checkpoint uploads and downloads (filled by the agent)
  std::optional<process::Credentials> run_as;  // job programs run as this user (--run-as); nullopt: the worker's
  // With run_as: a gang's programs run with a group of their own from this range and rank 0's
  // rendezvous port is kept to the gang (worker/gang_firewall.h); nullopt: the port stays open.
  std::optional<GangGidRange> gang_gids;
  std::string cgroup_parent;       // each run's cgroup v2 goes under this folder; empty: none (worker/job_containment.h)
  int setup_timeout_s = 3600;      // longest a command job's setup command may run (worker/job_setup.h)
  // Jobs in an image run in containers of this runtime (--container-runtime); null: they fail here
  // (and jobctld offers none, the worker registering no runtime). Shared by the runner threads.
  std::shared_ptr<ContainerRuntime> containers;
  // Bounds the images the runtime keeps (--image-cache-mb); null: unbounded. Shared by the runner threads.
  std::shared_ptr<ImageCache> image_cache;
  std::vector<train::AllowedMount> allowed_mounts;  // host folders jobs in an image may mount (--allow-mount)
  int container_pids_limit = 32768;  // processes one container may have
  HostGpuFiles gpu_files;            // where the machine's NVIDIA device nodes and libraries are
  std::string worker_name;           // labels its containers (with work_dir, which tells workers apart)
};

}  // namespace jobctl::worker
