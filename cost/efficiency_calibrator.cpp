#include "cost/efficiency_calibrator.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "cost/runtime_estimate.h"

namespace jobctl::cost {

namespace {
constexpr double kMinEfficiency = 1e-6;
}

Status EfficiencyCalibrator::observe(std::string_view gpu_model, std::string_view model_kind,
                                     double step_flops, double step_seconds, int gpus, Precision precision) {
  const GpuSpec* gpu = find_gpu(gpu_model);
  if (!gpu) return make_error(ErrorCode::invalid_argument, "unknown GPU model '" + std::string(gpu_model) + "'", "gpu_model");
  if (model_kind.empty()) return make_error(ErrorCode::invalid_argument, "model_kind is empty", "model_kind");
  if (!(std::isfinite(step_flops) && step_flops > 0))
    return make_error(ErrorCode::invalid_argument, "step_flops must be > 0", "step_flops");
  if (!(std::isfinite(step_seconds) && step_seconds > 0))
    return make_error(ErrorCode::invalid_argument, "step_seconds must be > 0", "step_seconds");
  if (gpus < 1) return make_error(ErrorCode::invalid_argument, "gpus must be >= 1", "gpus");

  const double peak = peak_tflops(*gpu, precision) * 1e12 * gpus;
  const double eff = std::clamp(step_flops / (step_seconds * peak), kMinEfficiency, 1.0);
  auto& e = entries_[{std::string(gpu->name), std::string(model_kind)}];
  e.samples += 1;
  const double w = 1.0 / static_cast<double>(std::min<int64_t>(e.samples, kWindow));
  e.log_efficiency += w * (std::log(eff) - e.log_efficiency);
  return ok_status();
}

std::optional<Calibration> EfficiencyCalibrator::calibration(std::string_view gpu_model,
                                                             std::string_view model_kind) const {
  const std::string canonical = canonical_gpu_name(gpu_model);
  auto it = entries_.find(std::pair<std::string, std::string>{canonical, std::string(model_kind)});
  if (it == entries_.end()) return std::nullopt;
  return Calibration{canonical, std::string(model_kind), std::exp(it->second.log_efficiency), it->second.samples};
}

double EfficiencyCalibrator::efficiency(std::string_view gpu_model, std::string_view model_kind) const {
  if (auto c = calibration(gpu_model, model_kind)) return c->efficiency;
  return default_efficiency(canonical_gpu_name(gpu_model), model_kind);
}

std::vector<Calibration> EfficiencyCalibrator::all() const {
  std::vector<Calibration> out;
  for (const auto& [key, e] : entries_)
    out.push_back(Calibration{key.first, key.second, std::exp(e.log_efficiency), e.samples});
  return out;
}

nlohmann::json EfficiencyCalibrator::to_json() const {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& [key, e] : entries_) {
    entries.push_back({{"gpu", key.first},
                       {"model_kind", key.second},
                       {"log_efficiency", e.log_efficiency},
                       {"efficiency", std::exp(e.log_efficiency)},
                       {"samples", e.samples}});
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
    if (!e.contains("samples") || !e["samples"].is_number_integer() || e["samples"].get<int64_t>() < 1)
      return bad(at + ".samples must be a positive integer", at + ".samples");
    const double log_eff = e["log_efficiency"].get<double>();
    if (!std::isfinite(log_eff) || log_eff > 0 || log_eff < std::log(kMinEfficiency) - 1e-9)
      return bad(at + ".log_efficiency is out of range", at + ".log_efficiency");
    const std::string gpu = canonical_gpu_name(e["gpu"].get<std::string>());
    if (!find_gpu(gpu)) return bad(at + ": unknown GPU model '" + gpu + "'", at + ".gpu");
    c.entries_[{gpu, e["model_kind"].get<std::string>()}] = Entry{log_eff, e["samples"].get<int64_t>()};
  }
  return c;
}

}  // namespace jobctl::cost
