#include "cost/model_flops_utilisation.h"

#include "cost/gpu_specs.h"

namespace jobctl::cost {

double default_transformer_utilisation(std::string_view gpu_model) {
  const GpuSpec* gpu = find_gpu(gpu_model);
  if (gpu && gpu->bf16_tflops > 0) return kTensorCoreBf16Utilisation;
  return kPreAmpereUtilisation;
}

}  // namespace jobctl::cost
