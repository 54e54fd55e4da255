// The program a lease runs and how: jobctl-train for a built-in model's spec, the spec's command
// for a command job. Both speak the job protocol (docs/job-protocol.md) and run through the same
// code; only what is started differs.
//
// Thread safety: plain values and a pure function.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/expected.h"
#include "train/spec/job_spec.h"
#include "worker/runner_options.h"

namespace jobctl::worker {

struct JobProgram {
  std::vector<std::string> argv;
  std::vector<std::string> env;      // the spec's env (NAME=value)
  std::filesystem::path cwd;         // the job's folder (jobctl-train) or its work/ (a command)
  std::string label;                 // for messages: "jobctl-train" or the command's program
  bool command = false;
  std::string bundle;                // a command job's code bundle (SHA-256), unpacked into cwd
  std::vector<std::string> setup;    // a command job's setup commands (worker/job_setup.h)
  uint64_t memory_limit_bytes = 0;   // RLIMIT_AS from resources.memory_mb; 0: none
  int grace_ms = 30000;              // after SIGTERM, how long before SIGKILL (checkpoint.grace_s)
  std::string image;                 // a command job's container image; "": runs on this machine
  train::ImagePull image_pull = train::ImagePull::if_missing;
  std::vector<train::MountSpec> mounts;  // host folders the container sees
};

// What the lease whose spec is `spec_json` runs (`spec_path`: where that spec was written).
// Errors: permission_denied (a command job on a worker without --allow-commands, a job in an
// image on a worker without --container-runtime),
// invalid_argument (a spec that is not an object, a malformed command).
Expected<JobProgram> program_for(const std::string& spec_json, const std::filesystem::path& spec_path,
                                 const RunnerOptions& options);

}  // namespace jobctl::worker
