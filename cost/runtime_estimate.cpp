#include "cost/runtime_estimate.h"

#include <algorithm>
#include <limits>

#include "cost/model_flops_utilisation.h"
#include "cost/workload.h"

namespace jobctl::cost {

double default_efficiency(std::string_view gpu_model, std::string_view model_kind) {
  // Starting points only; calibration from reported step times replaces them. The models jobctl
  // trains are small: on a GPU, kernel launches and memory traffic dominate, so they reach a few
  // percent of peak (convolutions more than dense layers); BLAS on a CPU gets much closer to its
  // (far lower) peak.
  const bool cpu = gpu_model == "cpu" || gpu_model.starts_with("cpu/");
  // A large transformer keeps a GPU busy: the published utilisation of its family.
  if (model_kind == kTransformerModelKind && !cpu) return default_transformer_utilisation(gpu_model);
  if (model_kind == "cnn") return cpu ? 0.20 : 0.10;
  if (model_kind == "mlp") return cpu ? 0.30 : 0.05;
  return cpu ? 0.20 : 0.05;
}

double effective_flops_per_hour(const GpuSpec& gpu, Precision precision, double efficiency, int gpus) {
  return peak_tflops(gpu, precision) * 1e12 * std::clamp(efficiency, 0.0, 1.0) * std::max(gpus, 1) * 3600.0;
}

double estimate_runtime_hours(double training_flops, const GpuSpec& gpu, Precision precision,
                              double efficiency, int gpus) {
  const double rate = effective_flops_per_hour(gpu, precision, efficiency, gpus);
  if (!(rate > 0)) return std::numeric_limits<double>::infinity();
  return std::max(training_flops, 0.0) / rate;
}

}  // namespace jobctl::cost
