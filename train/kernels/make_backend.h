// Chooses and creates the Backend a run trains on (`jobctl-train --device cpu|cuda|auto`).
//
// Thread safety: free functions; the returned Backend is for one thread at a time.
#pragma once

#include <memory>
#include <string_view>

#include "base/expected.h"
#include "train/kernels/backend.h"

namespace jobctl::train {

enum class DeviceChoice { cpu, cuda, auto_ };

// "cpu", "cuda", "auto"; anything else is an error naming the accepted values.
Expected<DeviceChoice> parse_device_choice(std::string_view text);

// Whether this build has the CUDA path.
bool cuda_built();
// Usable CUDA devices (0 in a build without CUDA or on a machine without a GPU).
int cuda_devices();

struct BackendOptions {
  int cpu_threads = 0;      // BLAS threads on the CPU; <= 0: all cores
  bool cuda_graphs = true;  // replay recorded steps as CUDA graphs
};

// auto: CUDA when built with it and a device is present, else the CPU. cuda: error code
// "device_unavailable" when the build has no CUDA or no device can be used.
Expected<std::unique_ptr<Backend>> make_backend(DeviceChoice choice, const BackendOptions& options = {});

}  // namespace jobctl::train
