#include "train/kernels/make_backend.h"

#include <exception>
#include <string>

#include "train/kernels/cpu_backend.h"
#ifdef JOBCTL_HAVE_CUDA
#include "train/kernels/cuda_backend.h"
#endif

namespace jobctl::train {

Expected<DeviceChoice> parse_device_choice(std::string_view text) {
  if (text == "cpu") return DeviceChoice::cpu;
  if (text == "cuda") return DeviceChoice::cuda;
  if (text == "auto") return DeviceChoice::auto_;
  return make_error(ErrorCode::invalid_argument, "--device must be cpu, cuda or auto (got \"" + std::string(text) + "\")",
                    "device");
}

bool cuda_built() {
#ifdef JOBCTL_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_devices() {
#ifdef JOBCTL_HAVE_CUDA
  return cuda_device_count();
#else
  return 0;
#endif
}

Expected<std::unique_ptr<Backend>> make_backend(DeviceChoice choice, const BackendOptions& options) {
  const bool want_cuda = choice == DeviceChoice::cuda || (choice == DeviceChoice::auto_ && cuda_devices() > 0);
  if (!want_cuda) return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(options.cpu_threads));
  if (!cuda_built())
    return make_error(ErrorCode::device_unavailable, "--device cuda: this build of jobctl-train has no CUDA support");
  if (cuda_devices() == 0) return make_error(ErrorCode::device_unavailable, "--device cuda: no usable CUDA device");
#ifdef JOBCTL_HAVE_CUDA
  try {
    return make_cuda_backend(CudaBackendOptions{0, options.cuda_graphs});
  } catch (const std::exception& e) {
    return make_error(ErrorCode::device_unavailable, std::string("CUDA device could not be initialised: ") + e.what());
  }
#else
  return make_error(ErrorCode::device_unavailable, "no CUDA support");
#endif
}

}  // namespace jobctl::train
