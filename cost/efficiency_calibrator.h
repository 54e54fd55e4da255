// Learns, per (GPU model, model kind), what fraction of peak throughput training really reaches,
// from the step times workers report, so runtime estimates improve with use.
//
// Each observation is one step (or an average over several): the FLOPs it did and how long it
// took; its efficiency is flops / (seconds * gpus * peak_tflops(gpu, precision) * 1e12). The
// calibrated value is a running mean of log-efficiency — efficiencies are ratios, and one slow
// step (a cold cache, a checkpoint) should not move the estimate as much as the arithmetic mean
// would — with weight 1/n for the first 20 observations and 1/20 after that, so the estimate
// settles quickly and still follows changes (a new driver, a faster kernel).
//
// The state is a plain value: to_json / from_json let the daemon persist it between runs.
//
// Thread safety: none; the owner serialises access (the daemon holds it under its lock).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/expected.h"
#include "cost/gpu_specs.h"

namespace jobctl::cost {

struct Calibration {
  std::string gpu_model;
  std::string model_kind;
  double efficiency = 0;
  int64_t samples = 0;
};

class EfficiencyCalibrator {
 public:
  static constexpr int kWindow = 20;

  // Records one observation. Errors ("invalid_argument", naming the field): unknown GPU model,
  // non-positive flops or seconds, gpus < 1.
  [[nodiscard]] Status observe(std::string_view gpu_model, std::string_view model_kind, double step_flops,
                               double step_seconds, int gpus = 1, Precision precision = Precision::fp32);

  // The calibrated efficiency, or default_efficiency() when nothing was observed.
  double efficiency(std::string_view gpu_model, std::string_view model_kind) const;
  std::optional<Calibration> calibration(std::string_view gpu_model, std::string_view model_kind) const;
  std::vector<Calibration> all() const;

  // {"version": 1, "entries": [{"gpu": "V100", "model_kind": "mlp", "log_efficiency": ...,
  //   "efficiency": ..., "samples": n}, ...]}
  nlohmann::json to_json() const;
  [[nodiscard]] static Expected<EfficiencyCalibrator> from_json(const nlohmann::json& j);

 private:
  struct Entry {
    double log_efficiency = 0;
    int64_t samples = 0;
  };
  std::map<std::pair<std::string, std::string>, Entry, std::less<>> entries_;
};

}  // namespace jobctl::cost
