// What a worker offers (its GPUs, or none) and whether a job fits it.
//
// Wire form (POST /v1/workers/register, docs/api.md):
//   {"gpus": [{"model": "NVIDIA A100-SXM4-80GB", "memory_mb": 81920}, ...],
//    "cpu_cores": 16, "memory_mb": 131072,
//    "cpu": {"model": "AMD EPYC 7B13", "vendor": "AuthenticAMD", "vector_bits": 256, "fma": true,
//            "mhz": 2450, "measured_tflops": 0.21},
//                                               (optional: what cost/cpu_peak.h needs;
//                                                measured_tflops, itself optional, is the worker's
//                                                GEMM measurement at start, at most
//                                                kMaxMeasuredCpuTflops)
//    "simulated": true,                         (optional: GPUs faked, training on the CPU)
//    "commands": true,                          (optional: runs command jobs, --allow-commands)
//    "containers": "podman",                    (optional: runs jobs in an image with this runtime,
//                                                --container-runtime)
//    "mounts": [{"prefix": "/srv/data", "writable": false}],
//                                               (optional: host folders such jobs may mount,
//                                                --allow-mount)
//    "machine_id": "3f2a...:gpu-box-1",         (optional: the machine's identity, jobctl-worker
//                                                --machine-id; a new registration with the same
//                                                one replaces the older worker, see JobService)
//    "address": "10.0.3.7"}                     (optional: where the other nodes of a gang reach
//                                                this machine, jobctl-worker --address)
// An empty (or absent) "gpus" list is a CPU-only worker. The type is part of the worker's stored
// row (records.h); the HTTP layer decodes a registration's body with the same function.
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
#include "cost/cpu_peak.h"
#include "cost/gpu_specs.h"
#include "train/spec/allowed_mounts.h"

namespace jobctl::daemon::store {

inline constexpr double kMaxMeasuredCpuTflops = 1000;

struct GpuDevice {
  std::string model;      // as the worker's nvidia-smi prints it
  int64_t memory_mb = 0;

  // The variant this device is (cost::identify_gpu of its name and memory); nullptr: unknown.
  const cost::GpuSpec* identity() const;
};

// The cloud instance a worker runs on (contract in docs/api.md, "The placement document"): absent for an owned
// (local) machine. Wire form: "instance": {"id": "...", "provider": "sim", "instance_type":
// "p3.2xlarge", "spot": true}. A Slurm batch job jobctld submitted for one job registers
// {"id": "<Slurm job id>", "provider": "slurm", "instance_type": "<partition>", "job_id": N}:
// `job_id` ties the worker to that one job (placement_matcher.h); so does it for a cloud instance
// jobctld launched for one command job (cloud/provider.h, LaunchRequest::for_job).
struct WorkerInstance {
  std::string id;
  std::string provider;
  std::string instance_type;
  bool spot = false;
  int64_t job_id = 0;  // the one job it was started for (0: any job placed on its kind)
};

struct WorkerCapabilities {
  std::vector<GpuDevice> gpus;
  int cpu_cores = 0;
  int64_t memory_mb = 0;
  std::optional<WorkerInstance> instance;  // none: a local worker
  std::optional<cost::CpuFacts> cpu;       // cores: cpu_cores; none: the worker did not say
  bool simulated = false;                  // GPUs faked (jobctl-worker --fake-gpus / --simulated)
  bool commands = false;                   // runs command jobs (jobctl-worker --allow-commands)
  std::string containers;                  // the container runtime it runs jobs in an image with; "": none
  std::vector<train::AllowedMount> mounts; // host folders those jobs may mount
  std::string machine_id;                  // the machine it runs on; empty: not said (never replaced)
  std::string address;                     // a host name or IP the gang's other nodes reach it at; empty: not said

  bool cpu_only() const { return gpus.empty(); }
};

// Strict parse: unknown keys and wrong types are errors naming the field under `field_prefix`
// (e.g. "capabilities.gpus[0].model").
Expected<WorkerCapabilities> capabilities_from_json(const nlohmann::json& j,
                                                    const std::string& field_prefix);
nlohmann::json to_json(const WorkerCapabilities& caps);

}  // namespace jobctl::daemon::store
