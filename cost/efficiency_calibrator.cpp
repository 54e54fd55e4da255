#include "cost/efficiency_calibrator.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "cost/runtime_estimate.h"

namespace jobctl::cost {

namespace {

constexpr double kMinEfficiency = 1e-6;

bool is_cpu_key(std::string_view device) { return device == "cpu" || device.starts_with("cpu/"); }

double weight(int64_t samples) {
  return 1.0 / static_cast<double>(std::min<int64_t>(samples, EfficiencyCalibrator::kWindow));
}

}  // namespace

std::string calibration_device(std::string_view device) {
  if (is_cpu_key(device)) return std::string(device);
  return canonical_gpu_name(device);
}

Status EfficiencyCalibrator::record(const std::string& device, std::string_view model_kind, double step_flops,
                                    double step_seconds, double peak) {
  if (model_kind.empty()) return make_error(ErrorCode::invalid_argument, "model_kind is empty", "model_kind");
  if (!(std::isfinite(step_flops) && step_flops > 0))
    return make_error(ErrorCode::invalid_argument, "step_flops must be > 0", "step_flops");
  if (!(std::isfinite(step_seconds) && step_seconds > 0))
    return make_error(ErrorCode::invalid_argument, "step_seconds must be > 0", "step_seconds");
  if (!(std::isfinite(peak) && peak > 0))
    return make_error(ErrorCode::invalid_argument, "peak_flops_per_second must be > 0", "peak_flops_per_second");
  const double eff = std::clamp(step_flops / (step_seconds * peak), kMinEfficiency, 1.0);
  auto& e = entries_[{device, std::string(model_kind)}];
  e.samples += 1;
  e.log_efficiency += weight(e.samples) * (std::log(eff) - e.log_efficiency);
  return ok_status();
}

Status EfficiencyCalibrator::observe(std::string_view gpu_model, std::string_view model_kind, double step_flops,
                                     double step_seconds, int gpus, Precision precision) {
  const GpuSpec* gpu = find_gpu(gpu_model);
  if (!gpu) return make_error(ErrorCode::invalid_argument, "unknown GPU model '" + std::string(gpu_model) + "'", "gpu_model");
  if (gpus < 1) return make_error(ErrorCode::invalid_argument, "gpus must be >= 1", "gpus");
  return record(std::string(gpu->name), model_kind, step_flops, step_seconds,
                peak_tflops(*gpu, precision) * 1e12 * gpus);
}

Status EfficiencyCalibrator::observe_at_peak(std::string_view device, std::string_view model_kind, double step_flops,
                                             double step_seconds, double peak_flops_per_second) {
  const std::string key = calibration_device(device);
  if (!is_cpu_key(key) && !find_gpu(key))
    return make_error(ErrorCode::invalid_argument, "unknown device '" + std::string(device) + "'", "gpu_model");
  return record(key, model_kind, step_flops, step_seconds, peak_flops_per_second);
}

Status EfficiencyCalibrator::observe_overhead(std::string_view device, std::string_view model_kind, double seconds) {
  if (!(std::isfinite(seconds) && seconds >= 0))
    return make_error(ErrorCode::invalid_argument, "overhead seconds must be >= 0", "overhead_seconds");
  if (model_kind.empty()) return make_error(ErrorCode::invalid_argument, "model_kind is empty", "model_kind");
  auto& e = entries_[{calibration_device(device), std::string(model_kind)}];
  e.overhead_samples += 1;
  e.overhead_seconds += weight(e.overhead_samples) * (seconds - e.overhead_seconds);
  return ok_status();
}

Status EfficiencyCalibrator::observe_run(std::string_view device, std::string_view model_kind, double step_flops,
                                         double steady_step_seconds, double peak_flops_per_second,
                                         double elapsed_seconds, int64_t steps) {
  if (steps < 1) return make_error(ErrorCode::invalid_argument, "a run needs at least one step", "steps");
  if (!(std::isfinite(elapsed_seconds) && elapsed_seconds >= 0))
    return make_error(ErrorCode::invalid_argument, "elapsed seconds must be >= 0", "elapsed_seconds");
  if (auto st = observe_at_peak(device, model_kind, step_flops, steady_step_seconds, peak_flops_per_second); !st)
    return st;
  return observe_overhead(device, model_kind,
                          std::max(0.0, elapsed_seconds - static_cast<double>(steps) * steady_step_seconds));
}

double EfficiencyCalibrator::expected_run_hours(std::string_view device, std::string_view model_kind,
                                                double training_flops, double peak_flops_per_second) const {
  const double rate = peak_flops_per_second * efficiency(device, model_kind);
  if (!(rate > 0)) return std::numeric_limits<double>::infinity();
  return (training_flops / rate + overhead_seconds(device, model_kind)) / 3600.0;
}

double EfficiencyCalibrator::overhead_seconds(std::string_view device, std::string_view model_kind) const {
  auto it = entries_.find(std::pair<std::string, std::string>{calibration_device(device), std::string(model_kind)});
  return it == entries_.end() ? 0.0 : it->second.overhead_seconds;
}

std::optional<Calibration> EfficiencyCalibrator::calibration(std::string_view gpu_model,
                                                             std::string_view model_kind) const {
  const std::string key = calibration_device(gpu_model);
  auto it = entries_.find(std::pair<std::string, std::string>{key, std::string(model_kind)});
  if (it == entries_.end()) return std::nullopt;
  const Entry& e = it->second;
  return Calibration{key, std::string(model_kind), std::exp(e.log_efficiency), e.samples, e.overhead_seconds,
                     e.overhead_samples};
}

double EfficiencyCalibrator::efficiency(std::string_view gpu_model, std::string_view model_kind) const {
  if (auto c = calibration(gpu_model, model_kind); c && c->samples > 0) return c->efficiency;
  return default_efficiency(calibration_device(gpu_model), model_kind);
}

std::vector<Calibration> EfficiencyCalibrator::all() const {
  std::vector<Calibration> out;
  for (const auto& [key, e] : entries_)
    out.push_back(Calibration{key.first, key.second, std::exp(e.log_efficiency), e.samples, e.overhead_seconds,
                              e.overhead_samples});
  return out;
}

nlohmann::json EfficiencyCalibrator::to_json() const {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& [key, e] : entries_) {
    nlohmann::json entry = {{"gpu", key.first},
                            {"model_kind", key.second},
                            {"log_efficiency", e.log_efficiency},
                            {"efficiency", std::exp(e.log_efficiency)},
                            {"samples", e.samples}};
    if (e.overhead_samples > 0) {
      entry["overhead_s"] = e.overhead_seconds;
      entry["overhead_samples"] = e.overhead_samples;
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
    if (!std::isfinite(log_eff) || log_eff > 0 || log_eff < std::log(kMinEfficiency) - 1e-9)
      return bad(at + ".log_efficiency is out of range", at + ".log_efficiency");
    Entry entry{log_eff, e["samples"].get<int64_t>(), 0, 0};
    if (e.contains("overhead_s") || e.contains("overhead_samples")) {
      if (!e.contains("overhead_s") || !e["overhead_s"].is_number() || !(e["overhead_s"].get<double>() >= 0) ||
          !std::isfinite(e["overhead_s"].get<double>()))
        return bad(at + ".overhead_s must be a number >= 0", at + ".overhead_s");
      if (!e.contains("overhead_samples") || !e["overhead_samples"].is_number_integer() ||
          e["overhead_samples"].get<int64_t>() < 0)
        return bad(at + ".overhead_samples must be a non-negative integer", at + ".overhead_samples");
      entry.overhead_seconds = e["overhead_s"].get<double>();
      entry.overhead_samples = e["overhead_samples"].get<int64_t>();
    }
    if (entry.samples < 1 && entry.overhead_samples < 1)
      return bad(at + " has no samples", at + ".samples");
    const std::string device = calibration_device(e["gpu"].get<std::string>());
    if (!is_cpu_key(device) && !find_gpu(device)) return bad(at + ": unknown GPU model '" + device + "'", at + ".gpu");
    c.entries_[{device, e["model_kind"].get<std::string>()}] = entry;
  }
  return c;
}

}  // namespace jobctl::cost
