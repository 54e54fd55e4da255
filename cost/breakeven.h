// Owning against renting: for one local GPU and one cloud price, when does the purchase pay off?
//
//   breakeven_hours        total hours of use after which renting would have cost more than buying:
//                          (purchase + setup) / (cloud_per_hour - opex_per_hour)
//                          (a $2,000 V100 against p3.2xlarge at $3.06/h, no power: 653.6 h)
//   utilisation_threshold  the utilisation at which the amortised local hour (docs/architecture.md formulas)
//                          costs exactly the cloud hour:
//                          ((purchase + setup) / lifetime_years + maintenance_per_year)
//                              / (8760 * (cloud_per_hour - energy_per_hour))
//   breakeven_hours_per_month  utilisation_threshold * 730 (hours of use a month from which owning
//                          is cheaper over the GPU's lifetime)
//   payback_months         at the inventory's utilisation: (purchase + setup) / monthly saving, the
//                          saving being 730 * u * (cloud - energy) - maintenance / 12
// Each is absent where it does not exist (the cloud hour is cheaper than running the GPU).
// The curve gives the hourly costs at utilisations 10%, 20%, ..., 100%.
//
// Thread safety: pure functions over values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "cost/local_gpu.h"
#include "cost/price_catalog.h"

namespace jobctl::cost {

struct BreakevenInput {
  LocalGpuInventory local;               // utilisation: the expected one (payback uses it)
  std::string offer;                     // "aws:p3.2xlarge", for labels
  double cloud_usd_per_hour = 0;         // on-demand, per GPU-equivalent compared
  std::optional<double> cloud_spot_usd_per_hour;
  std::string offer_gpu;                 // the offer's GPU (canonical name); "" when unknown
};

// Break-even against one hourly price.
struct BreakevenFigures {
  double cloud_usd_per_hour = 0;
  std::optional<double> breakeven_hours;
  std::optional<double> utilisation_threshold;     // may exceed 1: never within the lifetime
  std::optional<double> breakeven_hours_per_month;
  std::optional<double> payback_months;
  bool breaks_even_within_lifetime = false;        // threshold <= 1 and payback <= lifetime
};

struct BreakevenPoint {
  double utilisation = 0;
  double hours_per_month = 0;
  double local_amortised_usd_per_hour = 0;
  double local_marginal_usd_per_hour = 0;
  double cloud_on_demand_usd_per_hour = 0;
  std::optional<double> cloud_spot_usd_per_hour;
  double local_monthly_usd = 0;      // amortised hourly cost x hours
  double cloud_monthly_usd = 0;      // on-demand hourly price x hours
};

struct BreakevenReport {
  BreakevenInput input;
  BreakevenFigures on_demand;
  std::optional<BreakevenFigures> spot;
  std::vector<BreakevenPoint> curve;  // utilisation 0.1, 0.2, ..., 1.0
  // Said beside the figures: the offer's GPU is another model than the one owned (an A100 against
  // an H100 hour is no like-for-like comparison).
  std::vector<std::string> warnings;
};

BreakevenFigures breakeven_against(const LocalGpuInventory& local, double cloud_usd_per_hour);

// The cloud side of a break-even: an instance type's cheapest row in the region asked (in any
// region when none is), per GPU: its on-demand price, and the cheapest spot price among that
// region's rows (a region's zones differ in spot price only). nullopt: no such offer.
struct BreakevenOffer {
  const Offer* offer = nullptr;               // the cheapest on-demand row
  std::string label;                          // "aws:p3.8xlarge (per GPU)"
  double on_demand_usd_per_gpu_hour = 0;
  std::optional<double> spot_usd_per_gpu_hour;
  std::string spot_zone;                      // where that spot price is
};
std::optional<BreakevenOffer> breakeven_offer(const std::vector<Offer>& offers, std::string_view cloud,
                                              std::string_view instance_type, std::string_view region);

// The GPU of `offer` as the local inventory names its model (canonical variant name).
std::string offer_gpu_name(const Offer& offer);

// Validates the inventory and prices (errors name the field) and computes the report.
[[nodiscard]] Expected<BreakevenReport> breakeven_report(const BreakevenInput& input);

}  // namespace jobctl::cost
