// Learns, per (device, model kind), what fraction of peak throughput training really reaches and
// how long a run spends outside its steps, from what workers report, so that runtime estimates
// converge with use.
//
// A device is a GPU variant (its canonical name, gpu_specs.h) or a CPU machine (its key,
// cpu_peak.h: "cpu/AMD EPYC/2"), so CPUs of different models or core counts learn apart.
//
// Efficiency. Each observation is steps: the FLOPs one step did and how long it took; its
// efficiency is flops / (seconds * peak FLOP/s of the device's GPUs at the job's precision). The
// daemon observes once per finished run, with the run's steady-state step time
// (steady_step_time.h: the median of its progress windows after the first, so start-up,
// evaluation and checkpoint pauses do not count as step time).
//
// Overhead. What a run spends outside its steps (start-up, per-epoch evaluation, checkpoints):
// elapsed - steps x steady step time. An estimate is compute hours + this overhead, which is
// what makes three identical jobs agree with their estimate (docs/cost-model.md, "Calibration").
//
// Robustness (docs/cost-model.md, "Calibration"; the reports come from workers, which may lie):
// - an observation outside the plausible range is refused with the reason (an efficiency above
//   the device's peak or below kMinPlausibleEfficiency; an overhead above kMaxOverheadSeconds);
// - each (device, model kind) keeps its last kWindow runs, each with a weight (the caller gives a
//   new worker's first runs a low one), and the estimate is their weighted median (of
//   log-efficiency), so runs outweighed by others cannot move it however wild they are;
// - an estimate more than kUnconfirmedFactor away from the model's own figure
//   (default_efficiency; for the overhead, above kUnconfirmedOverheadSeconds) stands only when
//   runs of total weight kAgreeingRuns agree with it (lie within kAgreementFactor of it); until
//   then it is held at that bound.
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
  static constexpr int kWindow = 20;                       // runs kept per (device, model kind)
  static constexpr double kMinPlausibleEfficiency = 1e-8;  // of peak; below: a wrong report
  static constexpr double kMaxOverheadSeconds = 24 * 3600.0;
  static constexpr double kUnconfirmedFactor = 4.0;
  static constexpr double kUnconfirmedOverheadSeconds = 600.0;
  static constexpr double kAgreeingRuns = 3.0;
  static constexpr double kAgreementFactor = 1.5;

  // Records one observation of steps on a GPU (the peak from the table x gpus), counted with
  // `weight` (0 < weight <= 1). Errors ("invalid_argument", naming the field): unknown GPU model,
  // non-positive flops or seconds, gpus < 1, a bad weight, an implausible efficiency (field
  // "step_seconds": faster than the device's peak, or slower than kMinPlausibleEfficiency of it).
  [[nodiscard]] Status observe(std::string_view gpu_model, std::string_view model_kind, double step_flops,
                               double step_seconds, int gpus = 1, Precision precision = Precision::fp32,
                               double weight = 1.0);
  // The same on any device whose peak is given (a CPU: cpu_peak_tflops x 1e12). Errors: as above,
  // and a non-positive peak ("peak_flops_per_second").
  [[nodiscard]] Status observe_at_peak(std::string_view device, std::string_view model_kind, double step_flops,
                                       double step_seconds, double peak_flops_per_second, double weight = 1.0);
  // Records one run's time outside its steps. Errors: a negative or non-finite value, or one
  // above kMaxOverheadSeconds (field "overhead_seconds"); a bad weight.
  [[nodiscard]] Status observe_overhead(std::string_view device, std::string_view model_kind, double seconds,
                                        double weight = 1.0);
  // One finished run: `steps` steps of `step_flops` each, at a steady step time of
  // `steady_step_seconds` (steady_step_time.h), in `elapsed_seconds`: an efficiency observation
  // at `peak_flops_per_second`, and the overhead elapsed - steps x steady step time (at least 0).
  // Both are checked before either is recorded: a run with one implausible figure changes
  // nothing (field "elapsed_seconds" for an implausible overhead).
  [[nodiscard]] Status observe_run(std::string_view device, std::string_view model_kind, double step_flops,
                                   double steady_step_seconds, double peak_flops_per_second, double elapsed_seconds,
                                   int64_t steps, double weight = 1.0);
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
  //   "efficiency": ..., "samples": n, "overhead_s": ..., "overhead_samples": m,
  //   "runs": [[log_efficiency, weight], ...], "overhead_runs": [[seconds, weight], ...]}, ...]}
  // (the figures are the estimates; overhead_s and overhead_samples may be absent: none
  // observed). from_json checks every run as observe() would; an entry without "runs" (state
  // written before the window was kept) is read as one run of its figures, when they are plausible.
  nlohmann::json to_json() const;
  [[nodiscard]] static Expected<EfficiencyCalibrator> from_json(const nlohmann::json& j);

 private:
  using Sample = std::pair<double, double>;  // (log-efficiency or overhead seconds, weight)
  struct Entry {
    std::vector<Sample> efficiency_runs;  // the last kWindow, oldest first
    std::vector<Sample> overhead_runs;
    int64_t samples = 0;                  // observed in all, past the window too
    int64_t overhead_samples = 0;
  };
  // The checked log-efficiency of an observation, or why it is refused.
  static Expected<double> plausible_log_efficiency(std::string_view model_kind, double step_flops,
                                                   double step_seconds, double peak, double weight);
  void add(const std::string& device, std::string_view model_kind, std::optional<double> log_efficiency,
           std::optional<double> overhead_seconds, double weight);
  static double estimate_log_efficiency(const std::string& device, std::string_view model_kind, const Entry& e);
  static double estimate_overhead(const Entry& e);
  Calibration calibration_of(const std::string& device, const std::string& model_kind, const Entry& e) const;
  std::map<std::pair<std::string, std::string>, Entry, std::less<>> entries_;
};

}  // namespace jobctl::cost
