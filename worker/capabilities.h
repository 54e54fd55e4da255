// What this machine offers, as the worker registers it (docs/api.md, POST /v1/workers/register):
// NVIDIA GPUs found with `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader` (or, with
// --fake-gpus, with another program given the same arguments), or none (a CPU-only worker), plus
// its CPU (model, cores, vector width, FMA, clock: what cost/cpu_peak.h computes a peak from) and
// memory. A worker whose GPUs are faked, or that is told it is simulated (jobctl-cloudsim's
// instances), registers "simulated": true: it trains on the CPU whatever it claims, so its step
// times say nothing about the GPU it claims.
//
// Thread safety: pure functions, except detect_* which run a child process or read /proc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/expected.h"
#include "cost/cpu_peak.h"

namespace jobctl::worker {

struct Gpu {
  std::string model;
  int64_t memory_mb = 0;
};

// Parses nvidia-smi's CSV ("NVIDIA H100 80GB HBM3, 81559 MiB" per line). Lines it cannot read
// are skipped.
std::vector<Gpu> parse_nvidia_smi(std::string_view csv);

// Reads one /proc/driver/nvidia/gpus/*/information file ("Model:  Tesla V100-SXM2-16GB" line);
// nullopt when it has no model line. The memory is unknown there (0).
std::optional<Gpu> parse_proc_gpu_information(std::string_view text);

// The arguments the worker gives nvidia-smi (and a --fake-gpus program).
std::vector<std::string> gpu_query_arguments();

// Runs nvidia-smi; when it is absent or fails, reads /proc/driver/nvidia/gpus; no GPUs when
// neither answers.
std::vector<Gpu> detect_gpus();

// Runs `program` with gpu_query_arguments() instead of nvidia-smi (jobctl-worker --fake-gpus).
// Errors: the program cannot run, fails, or prints no GPU.
[[nodiscard]] Expected<std::vector<Gpu>> detect_fake_gpus(const std::string& program);

// Reads /proc/cpuinfo's text: the first "model name" (or "Hardware"/"Processor" on ARM), the
// vendor, the widest SIMD among the flags (avx512f 512, avx2/avx 256, sse2/asimd/neon 128), fma,
// the highest "cpu MHz". `cores` is left 0 (detect_cpu fills it).
cost::CpuFacts parse_cpuinfo(std::string_view text);
// This machine's: /proc/cpuinfo, the cores, and the width of the OpenBLAS core its jobs are pinned
// to when OPENBLAS_CORETYPE is in the worker's environment (cost::pin_to_blas_core).
cost::CpuFacts detect_cpu();

// What jobctl-train --measure-cpu printed (docs/train-cli.md): one core's FP32 rate on the models'
// GEMMs and the kernels it ran.
struct CpuThroughput {
  double core_gflops = 0;
  std::string kernels;
};

// The `cpu_throughput` line among jobctl-train's output lines; nullopt when there is none with a
// positive, finite rate.
std::optional<CpuThroughput> parse_cpu_throughput(std::string_view out);

// Runs `trainer --measure-cpu` (with the worker's environment, so with the kernels its jobs load).
// Errors: it cannot run, fails, takes longer than kCpuMeasureTimeout, or prints no rate.
[[nodiscard]] Expected<CpuThroughput> measure_cpu_throughput(const std::string& trainer);

// The machine's measured FP32 TFLOP/s as registered (cost::CpuFacts::measured_tflops): the core's
// rate times the cores (the upper bound gemm_throughput.h explains).
double measured_machine_tflops(const CpuThroughput& t, int cores);

// The capabilities document for registration. `cpu.cores` is the cpu_cores field; a positive
// `cpu.measured_tflops` is registered as cpu.measured_tflops.
nlohmann::json capabilities_json(const std::vector<Gpu>& gpus, const cost::CpuFacts& cpu, int64_t memory_mb,
                                 bool simulated = false);

int detect_cpu_cores();
int64_t detect_memory_mb();

// The machine's identity, registered as "machine_id": a worker that registers with the same one as
// an older worker replaces it (jobctld releases the older one's leases at once: its machine was
// restarted). A cloud instance or a Slurm job is its own machine: "<provider>:<instance id>". A
// local machine: the first line of `machine_id_file` (systemd's /etc/machine-id, stable across
// reboots) and the worker's name, "<id>:<name>", so two workers with different names share a
// machine without replacing each other. Empty when the file cannot be read: no identity.
std::string default_machine_id(const std::string& worker_name, const std::string& instance_provider,
                               const std::string& instance_id,
                               const std::string& machine_id_file = "/etc/machine-id");

}  // namespace jobctl::worker
