// What this machine offers, as the worker registers it (docs/api.md, POST /v1/workers/register):
// NVIDIA GPUs found with `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader`, or
// none (a CPU-only worker), plus CPU cores and memory.
//
// Thread safety: pure functions, except detect_gpus() which runs a child process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/expected.h"

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

// Runs nvidia-smi; when it is absent or fails, reads /proc/driver/nvidia/gpus; no GPUs when
// neither answers.
std::vector<Gpu> detect_gpus();

// The capabilities document for registration.
nlohmann::json capabilities_json(const std::vector<Gpu>& gpus, int cpu_cores, int64_t memory_mb);

int detect_cpu_cores();
int64_t detect_memory_mb();

}  // namespace jobctl::worker
