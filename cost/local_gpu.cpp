#include "cost/local_gpu.h"

#include <cmath>

namespace jobctl::cost {

std::string_view to_string(LocalPricing p) {
  return p == LocalPricing::marginal ? "marginal" : "amortised";
}

std::optional<LocalPricing> parse_local_pricing(std::string_view name) {
  if (name == "amortised" || name == "amortized") return LocalPricing::amortised;
  if (name == "marginal") return LocalPricing::marginal;
  return std::nullopt;
}

Status validate(const LocalGpuInventory& g) {
  auto bad = [](std::string field, std::string msg) {
    return Status(make_error(ErrorCode::invalid_argument, std::move(msg), std::move(field)));
  };
  auto finite_nonneg = [](double v) { return std::isfinite(v) && v >= 0; };
  if (g.gpu_model.empty()) return bad("gpu_model", "a local GPU needs a model name");
  if (g.count < 1) return bad("count", "count must be at least 1");
  if (!finite_nonneg(g.purchase_usd)) return bad("purchase_usd", "purchase_usd must be >= 0");
  if (!finite_nonneg(g.setup_usd)) return bad("setup_usd", "setup_usd must be >= 0");
  if (!(std::isfinite(g.lifetime_years) && g.lifetime_years > 0))
    return bad("lifetime_years", "lifetime_years must be > 0");
  if (!(std::isfinite(g.utilisation) && g.utilisation > 0 && g.utilisation <= 1))
    return bad("utilisation", "utilisation must be in (0, 1]");
  if (!finite_nonneg(g.power_kw)) return bad("power_kw", "power_kw must be >= 0");
  if (!(std::isfinite(g.pue) && g.pue >= 1)) return bad("pue", "pue must be >= 1");
  if (!finite_nonneg(g.electricity_usd_per_kwh))
    return bad("electricity_usd_per_kwh", "electricity_usd_per_kwh must be >= 0");
  if (!finite_nonneg(g.maintenance_usd_per_year))
    return bad("maintenance_usd_per_year", "maintenance_usd_per_year must be >= 0");
  return ok_status();
}

double capex_per_used_hour(const LocalGpuInventory& g, double utilisation) {
  return (g.purchase_usd + g.setup_usd) / (g.lifetime_years * kHoursPerYear * utilisation);
}
double capex_per_used_hour(const LocalGpuInventory& g) { return capex_per_used_hour(g, g.utilisation); }

double energy_per_hour(const LocalGpuInventory& g) {
  return g.power_kw * g.pue * g.electricity_usd_per_kwh;
}

double opex_per_hour(const LocalGpuInventory& g, double utilisation) {
  return energy_per_hour(g) + g.maintenance_usd_per_year / (kHoursPerYear * utilisation);
}
double opex_per_hour(const LocalGpuInventory& g) { return opex_per_hour(g, g.utilisation); }

double local_hourly_cost(const LocalGpuInventory& g, LocalPricing policy, double utilisation) {
  const double opex = opex_per_hour(g, utilisation);
  return policy == LocalPricing::marginal ? opex : capex_per_used_hour(g, utilisation) + opex;
}
double local_hourly_cost(const LocalGpuInventory& g, LocalPricing policy) {
  return local_hourly_cost(g, policy, g.utilisation);
}

}  // namespace jobctl::cost
