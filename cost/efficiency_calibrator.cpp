#include "cost/efficiency_calibrator.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "cost/runtime_estimate.h"

namespace jobctl::cost {

namespace {

using Sample = std::pair<double, double>;  // (value, weight)

bool is_cpu_key(std::string_view device) { return device == "cpu" || device.starts_with("cpu/"); }

bool good_weight(double w) { return std::isfinite(w) && w > 0 && w <= 1; }

// The weighted median: the value where half the weight lies on either side (the middle of the
// two values around it when the weight splits exactly there).
double weighted_median(std::vector<Sample> runs) {
  std::sort(runs.begin(), runs.end());
  double total = 0;
  for (const auto& [v, w] : runs) total += w;
  double below = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    below += runs[i].second;
    const double half = total / 2;
    if (std::fabs(below - half) <= 1e-12 * total && i + 1 < runs.size()) return (runs[i].first + runs[i + 1].first) / 2;
    if (below > half) return runs[i].first;
  }
  return runs.back().first;
}

// The total weight of the runs within `factor` of `value` (values are logs when `logs`).
double agreeing_weight(const std::vector<Sample>& runs, double value, double factor, bool logs) {
  double w = 0;
  for (const auto& [v, weight] : runs) {
    const bool agrees = logs ? std::fabs(v - value) <= std::log(factor) + 1e-12
                             : v <= value * factor + 1e-9 && v * factor + 1e-9 >= value;
    if (agrees) w += weight;
  }
  return w;
}

void push_window(std::vector<Sample>& window, Sample s) {
  window.push_back(s);
  if (window.size() > static_cast<size_t>(EfficiencyCalibrator::kWindow)) window.erase(window.begin());
}

}  // namespace

std::string calibration_device(std::string_view device) {
  if (is_cpu_key(device)) return std::string(device);
  return canonical_gpu_name(device);
}

Expected<double> EfficiencyCalibrator::plausible_log_efficiency(std::string_view model_kind, double step_flops,
                                                                double step_seconds, double peak, double weight) {
  if (model_kind.empty()) return make_error(ErrorCode::invalid_argument, "model_kind is empty", "model_kind");
  if (!(std::isfinite(step_flops) && step_flops > 0))
    return make_error(ErrorCode::invalid_argument, "step_flops must be > 0", "step_flops");
  if (!(std::isfinite(step_seconds) && step_seconds > 0))
    return make_error(ErrorCode::invalid_argument, "step_seconds must be > 0", "step_seconds");
  if (!(std::isfinite(peak) && peak > 0))
    return make_error(ErrorCode::invalid_argument, "peak_flops_per_second must be > 0", "peak_flops_per_second");
  if (!good_weight(weight)) return make_error(ErrorCode::invalid_argument, "weight must be in (0, 1]", "weight");
  const double eff = step_flops / (step_seconds * peak);
  if (!(eff <= 1.0))
    return make_error(ErrorCode::invalid_argument,
                      "implausible step time: " + std::to_string(step_seconds) +
                          " s per step would be faster than the device's peak",
                      "step_seconds");
  if (!(eff >= kMinPlausibleEfficiency))
    return make_error(ErrorCode::invalid_argument,
                      "implausible step time: " + std::to_string(step_seconds) +
                          " s per step would be below " + std::to_string(kMinPlausibleEfficiency) + " of the device's peak",
                      "step_seconds");
  return std::log(eff);
}

void EfficiencyCalibrator::add(const std::string& device, std::string_view model_kind,
                               std::optional<double> log_efficiency, std::optional<double> overhead_seconds,
                               double weight) {
  auto& e = entries_[{device, std::string(model_kind)}];
  if (log_efficiency) {
    ++e.samples;
    push_window(e.efficiency_runs, Sample{*log_efficiency, weight});
  }
  if (overhead_seconds) {
    ++e.overhead_samples;
    push_window(e.overhead_runs, Sample{*overhead_seconds, weight});
  }
}

Status EfficiencyCalibrator::observe(std::string_view gpu_model, std::string_view model_kind, double step_flops,
                                     double step_seconds, int gpus, Precision precision, double weight) {
  const GpuSpec* gpu = find_gpu(gpu_model);
  if (!gpu) return make_error(ErrorCode::invalid_argument, "unknown GPU model '" + std::string(gpu_model) + "'", "gpu_model");
  if (gpus < 1) return make_error(ErrorCode::invalid_argument, "gpus must be >= 1", "gpus");
  auto log_eff = plausible_log_efficiency(model_kind, step_flops, step_seconds, peak_tflops(*gpu, precision) * 1e12 * gpus,
                                          weight);
  if (!log_eff) return log_eff.error();
  add(std::string(gpu->name), model_kind, *log_eff, std::nullopt, weight);
  return ok_status();
}

Status EfficiencyCalibrator::observe_at_peak(std::string_view device, std::string_view model_kind, double step_flops,
                                             double step_seconds, double peak_flops_per_second, double weight) {
  const std::string key = calibration_device(device);
  if (!is_cpu_key(key) && !find_gpu(key))
    return make_error(ErrorCode::invalid_argument, "unknown device '" + std::string(device) + "'", "gpu_model");
  auto log_eff = plausible_log_efficiency(model_kind, step_flops, step_seconds, peak_flops_per_second, weight);
  if (!log_eff) return log_eff.error();
  add(key, model_kind, *log_eff, std::nullopt, weight);
  return ok_status();
}

Status EfficiencyCalibrator::observe_overhead(std::string_view device, std::string_view model_kind, double seconds,
                                              double weight) {
  if (!(std::isfinite(seconds) && seconds >= 0))
    return make_error(ErrorCode::invalid_argument, "overhead seconds must be >= 0", "overhead_seconds");
  if (seconds > kMaxOverheadSeconds)
    return make_error(ErrorCode::invalid_argument,
                      "implausible overhead: " + std::to_string(seconds) + " s outside the steps (at most " +
                          std::to_string(static_cast<int64_t>(kMaxOverheadSeconds)) + ")",
                      "overhead_seconds");
  if (model_kind.empty()) return make_error(ErrorCode::invalid_argument, "model_kind is empty", "model_kind");
  if (!good_weight(weight)) return make_error(ErrorCode::invalid_argument, "weight must be in (0, 1]", "weight");
  add(calibration_device(device), model_kind, std::nullopt, seconds, weight);
  return ok_status();
}

Status EfficiencyCalibrator::observe_run(std::string_view device, std::string_view model_kind, double step_flops,
                                         double steady_step_seconds, double peak_flops_per_second,
                                         double elapsed_seconds, int64_t steps, double weight) {
  if (steps < 1) return make_error(ErrorCode::invalid_argument, "a run needs at least one step", "steps");
  if (!(std::isfinite(elapsed_seconds) && elapsed_seconds >= 0))
    return make_error(ErrorCode::invalid_argument, "elapsed seconds must be >= 0", "elapsed_seconds");
  const std::string key = calibration_device(device);
  if (!is_cpu_key(key) && !find_gpu(key))
    return make_error(ErrorCode::invalid_argument, "unknown device '" + std::string(device) + "'", "gpu_model");
  auto log_eff = plausible_log_efficiency(model_kind, step_flops, steady_step_seconds, peak_flops_per_second, weight);
  if (!log_eff) return log_eff.error();
  const double overhead = std::max(0.0, elapsed_seconds - static_cast<double>(steps) * steady_step_seconds);
  if (overhead > kMaxOverheadSeconds)
    return make_error(ErrorCode::invalid_argument,
                      "implausible elapsed time: " + std::to_string(elapsed_seconds) + " s leaves " +
                          std::to_string(overhead) + " s outside the steps (at most " +
                          std::to_string(static_cast<int64_t>(kMaxOverheadSeconds)) + ")",
                      "elapsed_seconds");
  add(key, model_kind, *log_eff, overhead, weight);
  return ok_status();
}

double EfficiencyCalibrator::estimate_log_efficiency(const std::string& device, std::string_view model_kind,
                                                     const Entry& e) {
  const double prior = std::log(default_efficiency(device, model_kind));
  if (e.efficiency_runs.empty()) return prior;
  const double median = weighted_median(e.efficiency_runs);
  const double bound = std::log(kUnconfirmedFactor);
  if (std::fabs(median - prior) <= bound) return median;
  if (agreeing_weight(e.efficiency_runs, median, kAgreementFactor, /*logs=*/true) >= kAgreeingRuns - 1e-9)
    return median;
  return std::clamp(median, prior - bound, prior + bound);
}

double EfficiencyCalibrator::estimate_overhead(const Entry& e) {
  if (e.overhead_runs.empty()) return 0;
  const double median = weighted_median(e.overhead_runs);
  if (median <= kUnconfirmedOverheadSeconds) return median;
  if (agreeing_weight(e.overhead_runs, median, kAgreementFactor, /*logs=*/false) >= kAgreeingRuns - 1e-9)
    return median;
  return kUnconfirmedOverheadSeconds;
}

Calibration EfficiencyCalibrator::calibration_of(const std::string& device, const std::string& model_kind,
                                                 const Entry& e) const {
  return Calibration{device, model_kind, std::exp(estimate_log_efficiency(device, model_kind, e)), e.samples,
                     estimate_overhead(e), e.overhead_samples};
}

double EfficiencyCalibrator::expected_run_hours(std::string_view device, std::string_view model_kind,
                                                double training_flops, double peak_flops_per_second) const {
  const double rate = peak_flops_per_second * efficiency(device, model_kind);
  if (!(rate > 0)) return std::numeric_limits<double>::infinity();
  return (training_flops / rate + overhead_seconds(device, model_kind)) / 3600.0;
}

double EfficiencyCalibrator::overhead_seconds(std::string_view device, std::string_view model_kind) const {
  auto it = entries_.find(std::pair<std::string, std::string>{calibration_device(device), std::string(model_kind)});
  return it == entries_.end() ? 0.0 : estimate_overhead(it->second);
}

std::optional<Calibration> EfficiencyCalibrator::calibration(std::string_view gpu_model,
                                                             std::string_view model_kind) const {
  const std::string key = calibration_device(gpu_model);
  auto it = entries_.find(std::pair<std::string, std::string>{key, std::string(model_kind)});
  if (it == entries_.end()) return std::nullopt;
  return calibration_of(it->first.first, it->first.second, it->second);
}

double EfficiencyCalibrator::efficiency(std::string_view gpu_model, std::string_view model_kind) const {
  if (auto c = calibration(gpu_model, model_kind); c && c->samples > 0) return c->efficiency;
  return default_efficiency(calibration_device(gpu_model), model_kind);
}

std::vector<Calibration> EfficiencyCalibrator::all() const {
  std::vector<Calibration> out;
  for (const auto& [key, e] : entries_) out.push_back(calibration_of(key.first, key.second, e));
  return out;
}

nlohmann::json EfficiencyCalibrator::to_json() const {
  auto runs_json = [](const std::vector<Sample>& runs) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [v, w] : runs) out.push_back({v, w});
    return out;
  };
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& [key, e] : entries_) {
    const Calibration c = calibration_of(key.first, key.second, e);
    nlohmann::json entry = {{"gpu", key.first},
                            {"model_kind", key.second},
                            {"log_efficiency", std::log(c.efficiency)},
                            {"efficiency", c.efficiency},
                            {"samples", e.samples},
                            {"runs", runs_json(e.efficiency_runs)}};
    if (e.overhead_samples > 0) {
      entry["overhead_s"] = c.overhead_seconds;
      entry["overhead_samples"] = e.overhead_samples;
      entry["overhead_runs"] = runs_json(e.overhead_runs);
    }
    entries.push_back(std::move(entry));
  }
  return {{"version", 1}, {"entries", entries}};
}

Expected<EfficiencyCalibrator> EfficiencyCalibrator::from_json(const nlohmann::json& j) {
  auto bad = [](std::string msg, std::string field) {
    return Expected<EfficiencyCalibrator>(make_error(ErrorCode::invalid_argument, std::move(msg), std::move(field)));
  };
  if (!j.is_object()) return bad("calibration state must be a JSON object", "");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != 1)
    return bad("unsupported calibration version (expected 1)", "version");
  if (!j.contains("entries") || !j["entries"].is_array()) return bad("entries must be an array", "entries");
  // A window's runs, each checked as an observation is: [[value, weight], ...], the last kWindow.
  auto read_runs = [](const nlohmann::json& arr, double lo, double hi, std::vector<Sample>& out) -> bool {
    if (!arr.is_array()) return false;
    for (const auto& r : arr) {
      if (!r.is_array() || r.size() != 2 || !r[0].is_number() || !r[1].is_number()) return false;
      const double v = r[0].get<double>(), w = r[1].get<double>();
      if (!std::isfinite(v) || v < lo || v > hi || !good_weight(w)) return false;
      push_window(out, Sample{v, w});
    }
    return true;
  };
  const double min_log_eff = std::log(kMinPlausibleEfficiency);
  EfficiencyCalibrator c;
  size_t i = 0;
  for (const auto& e : j["entries"]) {
    const std::string at = "entries[" + std::to_string(i++) + "]";
    if (!e.is_object()) return bad(at + " must be an object", at);
    if (!e.contains("gpu") || !e["gpu"].is_string()) return bad(at + ".gpu must be a string", at + ".gpu");
    if (!e.contains("model_kind") || !e["model_kind"].is_string())
      return bad(at + ".model_kind must be a string", at + ".model_kind");
    if (!e.contains("log_efficiency") || !e["log_efficiency"].is_number())
      return bad(at + ".log_efficiency must be a number", at + ".log_efficiency");
    if (!e.contains("samples") || !e["samples"].is_number_integer() || e["samples"].get<int64_t>() < 0)
      return bad(at + ".samples must be a non-negative integer", at + ".samples");
    const double log_eff = e["log_efficiency"].get<double>();
    if (!std::isfinite(log_eff) || log_eff > 0 || log_eff < std::log(1e-6) - 1e-9)
      return bad(at + ".log_efficiency is out of range", at + ".log_efficiency");
    Entry entry;
    entry.samples = e["samples"].get<int64_t>();
    double overhead = 0;
    if (e.contains("overhead_s") || e.contains("overhead_samples")) {
      if (!e.contains("overhead_s") || !e["overhead_s"].is_number() || !(e["overhead_s"].get<double>() >= 0) ||
          !std::isfinite(e["overhead_s"].get<double>()))
        return bad(at + ".overhead_s must be a number >= 0", at + ".overhead_s");
      if (!e.contains("overhead_samples") || !e["overhead_samples"].is_number_integer() ||
          e["overhead_samples"].get<int64_t>() < 0)
        return bad(at + ".overhead_samples must be a non-negative integer", at + ".overhead_samples");
      overhead = e["overhead_s"].get<double>();
      entry.overhead_samples = e["overhead_samples"].get<int64_t>();
    }
    if (entry.samples < 1 && entry.overhead_samples < 1)
      return bad(at + " has no samples", at + ".samples");
    if (e.contains("runs")) {
      if (!read_runs(e["runs"], min_log_eff, 0.0, entry.efficiency_runs))
        return bad(at + ".runs must be [log_efficiency, weight] pairs within the plausible range", at + ".runs");
    } else if (entry.samples > 0 && log_eff >= min_log_eff) {
      entry.efficiency_runs.push_back(Sample{log_eff, 1.0});  // state from before the window: one run
    }
    if (e.contains("overhead_runs")) {
      if (!read_runs(e["overhead_runs"], 0.0, kMaxOverheadSeconds, entry.overhead_runs))
        return bad(at + ".overhead_runs must be [seconds, weight] pairs within the plausible range",
                   at + ".overhead_runs");
    } else if (entry.overhead_samples > 0 && overhead <= kMaxOverheadSeconds) {
      entry.overhead_runs.push_back(Sample{overhead, 1.0});
    }
    // Figures from before the window outside the plausible range are not carried over.
    if (entry.efficiency_runs.empty()) entry.samples = 0;
    if (entry.overhead_runs.empty()) entry.overhead_samples = 0;
    const std::string device = calibration_device(e["gpu"].get<std::string>());
    if (!is_cpu_key(device) && !find_gpu(device)) return bad(at + ": unknown GPU model '" + device + "'", at + ".gpu");
    if (entry.samples > 0 || entry.overhead_samples > 0) c.entries_[{device, e["model_kind"].get<std::string>()}] = entry;
  }
  return c;
}

}  // namespace jobctl::cost
