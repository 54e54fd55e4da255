#include <gtest/gtest.h>

#include "cost/breakeven.h"
#include "cost/local_gpu.h"

namespace jobctl::cost {
namespace {

LocalGpuInventory v100_2000() {
  LocalGpuInventory g;
  g.gpu_model = "V100";
  g.purchase_usd = 2000;
  g.lifetime_years = 4;
  g.utilisation = 0.5;
  return g;
}

TEST(LocalPricing, AmortisedFollowsDesignFormula) {
  LocalGpuInventory g;
  g.gpu_model = "A100-80GB";
  g.purchase_usd = 15000;
  g.setup_usd = 1000;
  g.lifetime_years = 4;
  g.utilisation = 0.6;
  g.power_kw = 0.5;
  g.pue = 1.4;
  g.electricity_usd_per_kwh = 0.12;
  g.maintenance_usd_per_year = 500;
  // capex = 16000 / (4 * 8760 * 0.6) = 0.76103501...
  EXPECT_NEAR(capex_per_used_hour(g), 16000.0 / (4 * 8760 * 0.6), 1e-12);
  EXPECT_NEAR(capex_per_used_hour(g), 0.761035, 1e-6);
  // opex = 0.5 * 1.4 * 0.12 + 500 / (8760 * 0.6) = 0.084 + 0.0951293...
  EXPECT_NEAR(opex_per_hour(g), 0.084 + 500.0 / (8760 * 0.6), 1e-12);
  EXPECT_NEAR(local_hourly_cost(g, LocalPricing::amortised), 0.761035 + 0.179129, 1e-5);
  EXPECT_NEAR(local_hourly_cost(g, LocalPricing::marginal), 0.179129, 1e-5);
  // Higher utilisation spreads the fixed costs thinner.
  EXPECT_LT(local_hourly_cost(g, LocalPricing::amortised, 0.9), local_hourly_cost(g, LocalPricing::amortised, 0.3));
  EXPECT_EQ(parse_local_pricing("marginal"), LocalPricing::marginal);
  EXPECT_EQ(parse_local_pricing("amortised"), LocalPricing::amortised);
  EXPECT_FALSE(parse_local_pricing("free").has_value());
}

TEST(LocalPricing, ValidationNamesTheField) {
  auto g = v100_2000();
  g.utilisation = 0;
  auto st = validate(g);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().field, "utilisation");
  g = v100_2000();
  g.pue = 0.9;
  EXPECT_EQ(validate(g).error().field, "pue");
  g = v100_2000();
  g.purchase_usd = -1;
  EXPECT_EQ(validate(g).error().field, "purchase_usd");
  EXPECT_TRUE(validate(v100_2000()));
}

TEST(Breakeven, UsedV100AgainstP3TwoXLarge) {
  // docs/architecture.md worked example: a used V100 for $2,000 against p3.2xlarge at $3.06/h, no power:
  // 2000 / 3.06 = 653.59 hours of use.
  BreakevenInput in;
  in.local = v100_2000();
  in.offer = "aws:p3.2xlarge";
  in.cloud_usd_per_hour = 3.06;
  auto r = breakeven_report(in);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->on_demand.breakeven_hours);
  EXPECT_NEAR(*r->on_demand.breakeven_hours, 653.6, 0.05);
  EXPECT_NEAR(*r->on_demand.breakeven_hours, 2000.0 / 3.06, 1e-9);
  // Threshold: (2000/4) / (8760 * 3.06) = 1.8653%; 13.62 h a month.
  ASSERT_TRUE(r->on_demand.utilisation_threshold);
  EXPECT_NEAR(*r->on_demand.utilisation_threshold, 500.0 / (8760 * 3.06), 1e-12);
  EXPECT_NEAR(*r->on_demand.breakeven_hours_per_month, 500.0 / (8760 * 3.06) * 730, 1e-9);
  // Payback at 50%: 2000 / (365 h * 3.06) = 1.7906 months.
  ASSERT_TRUE(r->on_demand.payback_months);
  EXPECT_NEAR(*r->on_demand.payback_months, 2000.0 / (365 * 3.06), 1e-9);
  EXPECT_TRUE(r->on_demand.breaks_even_within_lifetime);
  // The curve: 10 points, the amortised local hour equals the cloud hour at the threshold.
  ASSERT_EQ(r->curve.size(), 10u);
  EXPECT_DOUBLE_EQ(r->curve.front().utilisation, 0.1);
  EXPECT_DOUBLE_EQ(r->curve.back().utilisation, 1.0);
  EXPECT_NEAR(local_hourly_cost(in.local, LocalPricing::amortised, *r->on_demand.utilisation_threshold), 3.06, 1e-9);
}

TEST(Breakeven, PowerAndMaintenanceMoveTheFigures) {
  BreakevenInput in;
  in.local = v100_2000();
  in.local.power_kw = 0.3;
  in.local.pue = 1.5;
  in.local.electricity_usd_per_kwh = 0.2;  // 0.09 $/h
  in.local.maintenance_usd_per_year = 100;
  in.cloud_usd_per_hour = 3.06;
  in.cloud_spot_usd_per_hour = 0.92;
  auto r = breakeven_report(in);
  ASSERT_TRUE(r);
  const double opex = 0.09 + 100.0 / (8760 * 0.5);
  EXPECT_NEAR(*r->on_demand.breakeven_hours, 2000.0 / (3.06 - opex), 1e-9);
  EXPECT_NEAR(*r->on_demand.utilisation_threshold, (500.0 + 100.0) / (8760 * (3.06 - 0.09)), 1e-12);
  EXPECT_NEAR(*r->on_demand.payback_months, 2000.0 / (365 * (3.06 - 0.09) - 100.0 / 12), 1e-9);
  ASSERT_TRUE(r->spot);
  EXPECT_GT(*r->spot->breakeven_hours, *r->on_demand.breakeven_hours);  // cheaper rent pays back later
}

TEST(Breakeven, NeverWhenRentIsCheaperThanPower) {
  BreakevenInput in;
  in.local = v100_2000();
  in.local.power_kw = 1;
  in.local.electricity_usd_per_kwh = 0.5;  // 0.5 $/h just to run it
  in.cloud_usd_per_hour = 0.4;
  auto r = breakeven_report(in);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->on_demand.breakeven_hours);
  EXPECT_FALSE(r->on_demand.utilisation_threshold);
  EXPECT_FALSE(r->on_demand.payback_months);
  EXPECT_FALSE(r->on_demand.breaks_even_within_lifetime);
}

TEST(Breakeven, BadInputIsAnError) {
  BreakevenInput in;
  in.local = v100_2000();
  in.cloud_usd_per_hour = 0;
  auto r = breakeven_report(in);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "cloud_usd_per_hour");
  in.cloud_usd_per_hour = 3;
  in.local.lifetime_years = 0;
  EXPECT_EQ(breakeven_report(in).error().field, "lifetime_years");
}

}  // namespace
}  // namespace jobctl::cost
