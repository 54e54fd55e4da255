// Learns, per (device, model kind), what fraction of peak throughput training really reaches and
// how long a run spends outside its steps, from what workers report, so that runtime estimates
// converge with use.
//
// A device is a GPU variant (its canonical name, gpu_specs.h) or a CPU machine (its key,
// cpu_peak.h: "cpu/AMD EPYC/2"), so CPUs of different models or core counts learn apart.
//
// Efficiency. Each observation is steps: the FLOPs one step did and how long it took; its
// efficiency is flops / (seconds * peak FLOP/s of the device's GPUs at the job's precision). The
// calibrated value is a running mean of log-efficiency — efficiencies are ratios, and one slow
// observation should not move the estimate as much as the arithmetic mean would — with weight 1/n
// for the first 20 observations and 1/20 after that, so the estimate settles quickly and still
// follows changes (a new driver, a faster kernel). The daemon observes once per finished run, with
// the run's steady-state step time (steady_step_time.h: the median of its progress windows after
// the first, so start-up, evaluation and checkpoint pauses do not count as step time).
//
// Overhead. What a run spends outside its steps (start-up, per-epoch evaluation, checkpoints):
// elapsed - steps x steady step time, a running mean of seconds with the same weights. An
// estimate is compute hours + this overhead, which is what makes three identical jobs agree with
// their estimate (docs/cost-model.md, "Calibration").
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
  std::string gpu_model;   // the device: a GPU variant's name or a CPU key ("cpu/AMD EPYC/2")
  std::string model_kind;
  double efficiency = 0;
  int64_t samples = 0;
  double overhead_seconds = 0;   // per run, outside its steps
  int64_t overhead_samples = 0;
};

// The key a device name is learned under: a CPU key ("cpu", "cpu/<model>/<cores>") as it is, a
// GPU name as its variant's canonical name.
std::string calibration_device(std::string_view device);

class EfficiencyCalibrator {
 public:
  static constexpr int kWindow = 20;

  // Records one observation of steps on a GPU (the peak from the table x gpus). Errors
  // ("invalid_argument", naming the field): unknown GPU model, non-positive flops or seconds,
  // gpus < 1.
  [[nodiscard]] Status observe(std::string_view gpu_model, std::string_view model_kind, double step_flops,
                               double step_seconds, int gpus = 1, Precision precision = Precision::fp32);
  // The same on any device whose peak is given (a CPU: cpu_peak_tflops x 1e12). Errors: as above,
  // and a non-positive peak ("peak_flops_per_second").
  [[nodiscard]] Status observe_at_peak(std::string_view device, std::string_view model_kind, double step_flops,
                                       double step_seconds, double peak_flops_per_second);
  // Records one run's time outside its steps. Errors: a negative or non-finite value.
  [[nodiscard]] Status observe_overhead(std::string_view device, std::string_view model_kind, double seconds);
  // One finished run: `steps` steps of `step_flops` each, at a steady step time of
  // `steady_step_seconds` (steady_step_time.h), in `elapsed_seconds`: an efficiency observation
  // at `peak_flops_per_second`, and the overhead elapsed - steps x steady step time (at least 0).
  [[nodiscard]] Status observe_run(std::string_view device, std::string_view model_kind, double step_flops,
                                   double steady_step_seconds, double peak_flops_per_second, double elapsed_seconds,
                                   int64_t steps);
  // What a run of `training_flops` is expected to take on `gpus` of this device at
  // `peak_flops_per_second` (all of them together): compute at the calibrated efficiency plus the
  // calibrated overhead. Hours.
  double expected_run_hours(std::string_view device, std::string_view model_kind, double training_flops,
                            double peak_flops_per_second) const;

  // The calibrated efficiency, or default_efficiency() when nothing was observed.
  double efficiency(std::string_view gpu_model, std::string_view model_kind) const;
  // The calibrated overhead per run, seconds; 0 when nothing was observed.
  double overhead_seconds(std::string_view device, std::string_view model_kind) const;
  std::optional<Calibration> calibration(std::string_view gpu_model, std::string_view model_kind) const;
  std::vector<Calibration> all() const;

  // {"version": 1, "entries": [{"gpu": "V100-16GB", "model_kind": "mlp", "log_efficiency": ...,
  //   "efficiency": ..., "samples": n, "overhead_s": ..., "overhead_samples": m}, ...]}
  // (overhead_s and overhead_samples may be absent: none observed).
  nlohmann::json to_json() const;
  [[nodiscard]] static Expected<EfficiencyCalibrator> from_json(const nlohmann::json& j);

 private:
  struct Entry {
    double log_efficiency = 0;
    int64_t samples = 0;
    double overhead_seconds = 0;
    int64_t overhead_samples = 0;
  };
  Status record(const std::string& device, std::string_view model_kind, double step_flops, double step_seconds,
                double peak_flops_per_second);
  std::map<std::pair<std::string, std::string>, Entry, std::less<>> entries_;
};

}  // namespace jobctl::cost
