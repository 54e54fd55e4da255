#include "cost/breakeven.h"

#include <algorithm>
#include <cmath>

#include "cost/gpu_specs.h"

namespace jobctl::cost {

BreakevenFigures breakeven_against(const LocalGpuInventory& g, double cloud) {
  BreakevenFigures f;
  f.cloud_usd_per_hour = cloud;
  const double capital = g.purchase_usd + g.setup_usd;
  const double opex = opex_per_hour(g);
  const double energy = energy_per_hour(g);
  if (cloud > opex) f.breakeven_hours = capital / (cloud - opex);
  if (cloud > energy) {
    const double threshold =
        (capital / g.lifetime_years + g.maintenance_usd_per_year) / (kHoursPerYear * (cloud - energy));
    f.utilisation_threshold = threshold;
    f.breakeven_hours_per_month = threshold * kHoursPerMonth;
    const double monthly_saving =
        kHoursPerMonth * g.utilisation * (cloud - energy) - g.maintenance_usd_per_year / 12.0;
    if (monthly_saving > 0) f.payback_months = capital / monthly_saving;
    f.breaks_even_within_lifetime =
        threshold <= 1.0 && f.payback_months && *f.payback_months <= g.lifetime_years * 12.0;
  }
  return f;
}

Expected<BreakevenReport> breakeven_report(const BreakevenInput& in) {
  if (auto st = validate(in.local); !st) return st.error();
  if (!(std::isfinite(in.cloud_usd_per_hour) && in.cloud_usd_per_hour > 0))
    return make_error(ErrorCode::invalid_argument, "the cloud price must be a positive $/h", "cloud_usd_per_hour");
  if (in.cloud_spot_usd_per_hour &&
      !(std::isfinite(*in.cloud_spot_usd_per_hour) && *in.cloud_spot_usd_per_hour > 0))
    return make_error(ErrorCode::invalid_argument, "the spot price must be a positive $/h", "cloud_spot_usd_per_hour");

  BreakevenReport r;
  r.input = in;
  if (!in.offer_gpu.empty() && in.offer_gpu != in.local.gpu_model)
    r.warnings.push_back("the offer's GPU is " + in.offer_gpu + ", not the " + in.local.gpu_model +
                         " compared: the break-even weighs one GPU model's hour against another's");
  r.on_demand = breakeven_against(in.local, in.cloud_usd_per_hour);
  if (in.cloud_spot_usd_per_hour) r.spot = breakeven_against(in.local, *in.cloud_spot_usd_per_hour);
  for (int pct = 10; pct <= 100; pct += 10) {
    BreakevenPoint p;
    p.utilisation = pct / 100.0;
    p.hours_per_month = kHoursPerMonth * p.utilisation;
    p.local_amortised_usd_per_hour = local_hourly_cost(in.local, LocalPricing::amortised, p.utilisation);
    p.local_marginal_usd_per_hour = local_hourly_cost(in.local, LocalPricing::marginal, p.utilisation);
    p.cloud_on_demand_usd_per_hour = in.cloud_usd_per_hour;
    p.cloud_spot_usd_per_hour = in.cloud_spot_usd_per_hour;
    p.local_monthly_usd = p.local_amortised_usd_per_hour * p.hours_per_month;
    p.cloud_monthly_usd = in.cloud_usd_per_hour * p.hours_per_month;
    r.curve.push_back(p);
  }
  return r;
}

std::string offer_gpu_name(const Offer& offer) {
  const GpuSpec* spec = identify_gpu(offer.gpu_model, offer.gpu_memory_gb);
  return spec ? std::string(spec->name) : std::string();
}

std::optional<BreakevenOffer> breakeven_offer(const std::vector<Offer>& offers, std::string_view cloud,
                                              std::string_view instance_type, std::string_view region) {
  const auto found = find_offers(offers, cloud, instance_type, region);  // cheapest on-demand first
  if (found.empty()) return std::nullopt;
  BreakevenOffer b;
  b.offer = found.front();
  const double per = static_cast<double>(std::max(b.offer->gpu_count, 1));
  b.label = b.offer->name() + (b.offer->gpu_count > 1 ? " (per GPU)" : "");
  b.on_demand_usd_per_gpu_hour = b.offer->on_demand_usd_per_hour / per;
  for (const Offer* o : found) {
    if (o->region != b.offer->region || !o->spot_usd_per_hour) continue;
    const double spot = *o->spot_usd_per_hour / per;
    if (!b.spot_usd_per_gpu_hour || spot < *b.spot_usd_per_gpu_hour) {
      b.spot_usd_per_gpu_hour = spot;
      b.spot_zone = o->zone;
    }
  }
  return b;
}

}  // namespace jobctl::cost
