// Where a machine's NVIDIA device nodes, CDI specs, driver libraries and tools are: what a job
// in an image is given of its leased GPUs (worker/container_launch.h). A value, so that tests
// point it at a folder of fake device nodes.
//
// Thread safety: a plain value.
#pragma once

#include <filesystem>
#include <vector>

namespace jobctl::worker {

// Where the machine's NVIDIA pieces are (injected: tests use a folder of fake device nodes).
struct HostGpuFiles {
  std::filesystem::path dev_dir = "/dev";
  // A CDI spec naming nvidia.com/gpu here: the runtime is given "nvidia.com/gpu=N" instead of nodes.
  std::vector<std::filesystem::path> cdi_dirs = {"/etc/cdi", "/var/run/cdi"};
  // The driver's user-space libraries (libcuda, libnvidia-ml, ...) are bound read-only from here.
  std::vector<std::filesystem::path> library_dirs = {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"};
  std::vector<std::filesystem::path> programs = {"/usr/bin/nvidia-smi"};
};

}  // namespace jobctl::worker
