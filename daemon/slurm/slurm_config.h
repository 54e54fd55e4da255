// jobctld's "slurm" configuration section (docs/configuration.md, "slurm"; docs/slurm.md, "The
// configuration"): how jobctld reaches a Slurm cluster, which of its partitions placement may
// choose, and how each batch job is built.
//
//   "slurm": {"conf_file": "/etc/slurm/slurm.conf", "bin_dir": "", "timeout_s": 30,
//             "tag": "jobctl", "server_url": "http://10.1.0.5:8080",
//             "worker_command": "/shared/bin/jobctl-worker --server {server} --work-dir /scratch",
//             "partitions": [{"name": "a100", "gpu_model": "A100", "gpus_per_node": 0,
//                             "tasks_per_node": 1}],
//             "account": "", "qos": "", "sbatch_options": ["--constraint=ib"],
//             "time_margin": 0.5, "signal_lead_s": 120, "startup_s": 60, "poll_s": 5}
//
// Absent: no Slurm cluster. Present, it must name at least one partition: jobctld never offers a
// partition it was not told about (a cluster's partitions are often shared with other teams).
//
// Thread safety: plain values and pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/expected.h"
#include "train/spec/allowed_mounts.h"
#include "slurm/slurm_commands.h"

namespace jobctl::daemon::slurm {

struct SlurmPartitionSettings {
  std::string name;            // the Slurm partition
  std::string gpu_model;       // its GPUs' model as jobctl names them ("A100"): the cost.local_gpus
                               // entry it is priced by
  int gpus_per_node = 0;       // 0: from the nodes' GRES (`sinfo --json`); set it when the GRES
                               // has no count jobctl can read
  int tasks_per_node = 1;      // nodes of one gang a Slurm node may run side by side (each a task
                               // with its GPU share): 1 on a real cluster, one machine per node;
                               // more where one big node stands in for several (a test cluster)
};

struct SlurmSettings {
  bool enabled = false;        // the section is present
  std::string conf_file;       // SLURM_CONF for the commands (empty: the host's own)
  std::string bin_dir;         // folder of sbatch, squeue, ... (empty: found on PATH)
  int timeout_s = 30;          // per command
  std::string tag = "jobctl";  // --comment=jobctl:<tag>: marks this daemon's Slurm jobs
  std::string server_url;      // what the batch jobs' workers connect to (empty: the daemon's own URL)
  std::string worker_command = "jobctl-worker --server {server}";  // run on the node; {server}: server_url
  std::vector<SlurmPartitionSettings> partitions;
  std::string account;         // --account (optional)
  std::string qos;             // --qos (optional)
  std::vector<std::string> sbatch_options;  // more sbatch options, as they are
  double time_margin = 0.5;    // time limit: estimate x (1 + margin) + signal lead + start-up
  int signal_lead_s = 120;     // --signal=B:TERM@lead (a gang's: TERM@lead, to every task)
  int startup_s = 60;
  int poll_s = 5;              // squeue/sinfo read this often (queue waits, job states)
  // Jobs in an image: the batch job's worker is started with --container-runtime podman (podman
  // inside the batch job: Debian packages neither pyxis nor enroot) and an --allow-mount per prefix.
  train::ContainerSupport containers;

  // The options of the client commands.
  ::jobctl::slurm::SlurmCommandsOptions commands() const { return {bin_dir, conf_file, timeout_s}; }
};

// Applies the "slurm" object of the configuration document (absent: no Slurm cluster). Unknown
// keys, wrong types and values out of range are errors naming the key ("slurm.partitions[0].name").
Status apply_slurm_config(const nlohmann::json& document, SlurmSettings& settings);
Status validate(const SlurmSettings& settings);

}  // namespace jobctl::daemon::slurm
