// Owned GPUs and what an hour on one costs (docs/architecture.md "The cost model").
//
//   capex_per_used_hour = (purchase + setup) / (lifetime_years * 8760 * utilisation)
//   opex_per_hour       = power_kw * pue * electricity_per_kwh + maintenance_per_year / (8760 * utilisation)
//
// Two pricing policies, selectable per deployment:
//   amortised (default)  capex_per_used_hour + opex_per_hour — the purchase is paid back by use;
//   marginal             opex_per_hour only — the purchase is sunk, only running costs count.
// All figures are per GPU; a machine with `count` GPUs costs count times as much per hour.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/expected.h"

namespace jobctl::cost {

// Hours in a year (365 days): the amortisation formulas of docs/architecture.md count 8,760.
inline constexpr double kHoursPerYear = 8760.0;
// And in a month (a twelfth of it), for payback months and monthly figures.
inline constexpr double kHoursPerMonth = kHoursPerYear / 12.0;

struct LocalGpuInventory {
  std::string gpu_model;             // canonical name ("V100", "RTX4090", "cpu")
  int count = 1;                     // GPUs of this model owned
  double purchase_usd = 0;           // per GPU
  double setup_usd = 0;              // per GPU: its share of chassis, racking, installation
  double lifetime_years = 4;
  double utilisation = 0.5;          // expected fraction of hours in use, (0, 1]
  double power_kw = 0;               // per GPU under load, including its share of the host
  double pue = 1.0;                  // power usage effectiveness of the room, >= 1
  double electricity_usd_per_kwh = 0;
  double maintenance_usd_per_year = 0;  // per GPU
};

enum class LocalPricing { amortised, marginal };

std::string_view to_string(LocalPricing p);
std::optional<LocalPricing> parse_local_pricing(std::string_view name);

// Checks ranges: count >= 1, costs >= 0, lifetime > 0, 0 < utilisation <= 1, pue >= 1.
// Errors name the field ("utilisation").
[[nodiscard]] Status validate(const LocalGpuInventory& gpu);

// Per GPU-hour of use, at the inventory's utilisation or at the one given.
double capex_per_used_hour(const LocalGpuInventory& gpu);
double capex_per_used_hour(const LocalGpuInventory& gpu, double utilisation);
double energy_per_hour(const LocalGpuInventory& gpu);  // power_kw * pue * electricity
double opex_per_hour(const LocalGpuInventory& gpu);
double opex_per_hour(const LocalGpuInventory& gpu, double utilisation);

// What placement charges for one GPU-hour under a policy.
double local_hourly_cost(const LocalGpuInventory& gpu, LocalPricing policy);
double local_hourly_cost(const LocalGpuInventory& gpu, LocalPricing policy, double utilisation);

}  // namespace jobctl::cost
