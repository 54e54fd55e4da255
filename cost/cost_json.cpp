#include "cost/cost_json.h"

#include <cmath>
#include <set>

namespace jobctl::cost {

namespace {
template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
// +inf (no periodic checkpoint needed) is not JSON; null says "none".
nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

void to_json(nlohmann::json& j, const GpuSpec& g) {
  j = {{"name", g.name},           {"fp32_tflops", g.fp32_tflops}, {"tf32_tflops", g.tf32_tflops},
       {"fp16_tflops", g.fp16_tflops}, {"bf16_tflops", g.bf16_tflops}, {"memory_gb", g.memory_gb},
       {"bandwidth_gbs", g.bandwidth_gbs}, {"tdp_w", g.tdp_w},     {"source", g.source}};
}

void to_json(nlohmann::json& j, const Offer& o) {
  j = {{"cloud", o.cloud},
       {"instance_type", o.instance_type},
       {"region", o.region},
       {"zone", o.zone},
       {"gpu_model", o.gpu_model},
       {"gpu_count", o.gpu_count},
       {"gpu_memory_gb", o.gpu_memory_gb},
       {"vcpus", o.vcpus},
       {"memory_gb", o.memory_gb},
       {"on_demand_usd_per_hour", o.on_demand_usd_per_hour},
       {"spot_usd_per_hour", opt(o.spot_usd_per_hour)},
       {"source", o.source},
       {"date", o.date}};
}

void to_json(nlohmann::json& j, const LocalGpuInventory& g) {
  j = {{"gpu_model", g.gpu_model},
       {"count", g.count},
       {"purchase_usd", g.purchase_usd},
       {"setup_usd", g.setup_usd},
       {"lifetime_years", g.lifetime_years},
       {"utilisation", g.utilisation},
       {"power_kw", g.power_kw},
       {"pue", g.pue},
       {"electricity_usd_per_kwh", g.electricity_usd_per_kwh},
       {"maintenance_usd_per_year", g.maintenance_usd_per_year}};
}

void to_json(nlohmann::json& j, const BreakevenFigures& f) {
  j = {{"cloud_usd_per_hour", f.cloud_usd_per_hour},
       {"breakeven_hours", opt(f.breakeven_hours)},
       {"breakeven_hours_per_month", opt(f.breakeven_hours_per_month)},
       {"utilisation_threshold", opt(f.utilisation_threshold)},
       {"payback_months", opt(f.payback_months)},
       {"breaks_even_within_lifetime", f.breaks_even_within_lifetime}};
}

void to_json(nlohmann::json& j, const BreakevenPoint& p) {
  j = {{"utilisation", p.utilisation},
       {"hours_per_month", p.hours_per_month},
       {"local_amortised_usd_per_hour", p.local_amortised_usd_per_hour},
       {"local_marginal_usd_per_hour", p.local_marginal_usd_per_hour},
       {"cloud_on_demand_usd_per_hour", p.cloud_on_demand_usd_per_hour},
       {"cloud_spot_usd_per_hour", opt(p.cloud_spot_usd_per_hour)},
       {"local_monthly_usd", p.local_monthly_usd},
       {"cloud_monthly_usd", p.cloud_monthly_usd}};
}

void to_json(nlohmann::json& j, const BreakevenReport& r) {
  const auto& g = r.input.local;
  j = {{"gpu", g.gpu_model},
       {"offer", r.input.offer},
       {"local", g},
       {"capex_per_used_hour", capex_per_used_hour(g)},
       {"opex_per_hour", opex_per_hour(g)},
       {"local_amortised_usd_per_hour", local_hourly_cost(g, LocalPricing::amortised)},
       {"local_marginal_usd_per_hour", local_hourly_cost(g, LocalPricing::marginal)},
       {"cloud_on_demand_usd_per_hour", r.input.cloud_usd_per_hour},
       {"cloud_spot_usd_per_hour", opt(r.input.cloud_spot_usd_per_hour)},
       // The headline figures against on-demand, flat for scripts.
       {"breakeven_hours", opt(r.on_demand.breakeven_hours)},
       {"breakeven_hours_per_month", opt(r.on_demand.breakeven_hours_per_month)},
       {"utilisation_threshold", opt(r.on_demand.utilisation_threshold)},
       {"payback_months", opt(r.on_demand.payback_months)},
       {"on_demand", r.on_demand},
       {"spot", r.spot ? nlohmann::json(*r.spot) : nlohmann::json(nullptr)},
       {"curve", r.curve},
       {"warnings", r.warnings}};
}

void to_json(nlohmann::json& j, const SpotRunEstimate& e) {
  j = {{"checkpoint_interval_hours", finite_or_null(e.checkpoint_interval_hours)},
       {"expected_hours", e.expected_hours},
       {"expected_cost_usd", e.expected_cost_usd},
       {"overhead_fraction", e.overhead_fraction}};
}

void to_json(nlohmann::json& j, const VramEstimate& v) {
  j = {{"weight_bytes", v.weight_bytes},         {"gradient_bytes", v.gradient_bytes},
       {"optimizer_bytes", v.optimizer_bytes},   {"activation_bytes", v.activation_bytes},
       {"data_bytes", v.data_bytes},             {"workspace_bytes", v.workspace_bytes},
       {"total_bytes", v.total_bytes}};
}

Expected<LocalGpuInventory> local_gpu_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return make_error(ErrorCode::invalid_argument, "a local GPU entry must be a JSON object");
  static const std::set<std::string> kKnown{"gpu_model",   "count",       "purchase_usd",
                                            "setup_usd",   "lifetime_years", "utilisation",
                                            "power_kw",    "pue",         "electricity_usd_per_kwh",
                                            "maintenance_usd_per_year"};
  for (const auto& [key, value] : j.items()) {
    if (!kKnown.count(key)) return make_error(ErrorCode::invalid_argument, "unknown key '" + key + "'", key);
  }
  LocalGpuInventory g;
  if (!j.contains("gpu_model") || !j["gpu_model"].is_string())
    return make_error(ErrorCode::invalid_argument, "gpu_model must be a string", "gpu_model");
  g.gpu_model = j["gpu_model"].get<std::string>();
  if (j.contains("count")) {
    if (!j["count"].is_number_integer()) return make_error(ErrorCode::invalid_argument, "count must be an integer", "count");
    g.count = j["count"].get<int>();
  }
  struct NumField {
    const char* key;
    double* dst;
  };
  for (const NumField& f : {NumField{"purchase_usd", &g.purchase_usd}, NumField{"setup_usd", &g.setup_usd},
                            NumField{"lifetime_years", &g.lifetime_years}, NumField{"utilisation", &g.utilisation},
                            NumField{"power_kw", &g.power_kw}, NumField{"pue", &g.pue},
                            NumField{"electricity_usd_per_kwh", &g.electricity_usd_per_kwh},
                            NumField{"maintenance_usd_per_year", &g.maintenance_usd_per_year}}) {
    if (!j.contains(f.key)) continue;
    if (!j[f.key].is_number()) return make_error(ErrorCode::invalid_argument, std::string(f.key) + " must be a number", f.key);
    *f.dst = j[f.key].get<double>();
  }
  if (auto st = validate(g); !st) return st.error();
  return g;
}

}  // namespace jobctl::cost
