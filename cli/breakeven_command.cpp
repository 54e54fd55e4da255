// jobctl report breakeven --gpu MODEL --purchase-usd X --offer CLOUD:INSTANCE [--region R]
//                 [--catalog FILE [--catalog-cloud CLOUD]] [--setup-usd] [--power-kw] [--pue]
//                 [--electricity-usd-per-kwh] [--lifetime-years] [--utilisation]
//                 [--maintenance-usd-per-year] [--svg FILE] [-o table|json|csv|svg]
// Owning a GPU against renting one, with no daemon.
#include <CLI/CLI.hpp>

#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fixed_decimal.h"
#include "cli/cost_command_support.h"
#include "cost/breakeven.h"
#include "cost/breakeven_chart.h"
#include "cost/catalog_cloud.h"
#include "cost/cost_json.h"
#include "cost/gpu_specs.h"
#include "cost/price_catalog.h"

namespace jobctl::cli {

namespace {

struct BreakevenArgs {
  std::string gpu;
  double purchase_usd = -1;
  std::string offer;
  std::string region;
  std::string catalog;
  std::string catalog_cloud;
  double setup_usd = 0;
  std::optional<double> power_kw;
  double pue = 1.0;
  double electricity = 0.15;
  double lifetime_years = 4;
  double utilisation = 0.5;
  double maintenance = 0;
  std::string svg;
};

void run_breakeven(CliContext& ctx, const BreakevenArgs& a) {
  check_output(ctx, {"table", "json", "csv", "svg"});
  const cost::GpuSpec* spec = cost::find_gpu(a.gpu);
  if (!spec) {
    std::string near;
    for (const auto& n : cost::closest_gpu_names(a.gpu)) near += (near.empty() ? "" : ", ") + n;
    fail(ctx, "--gpu: unknown GPU model '" + a.gpu + "'; closest known names: " + near + " (`jobctl gpus` lists them)");
  }
  auto ref = cost::parse_offer_ref(a.offer);
  if (!ref) fail(ctx, "--offer: " + ref.error().message);

  std::vector<cost::Offer> imported;
  const std::vector<cost::Offer>* catalog = &cost::seed_catalog();
  std::string catalog_name = "the built-in catalog";
  if (!a.catalog.empty()) {
    const std::string text = read_file(ctx, a.catalog, "catalog");
    const std::string cloud =
        !a.catalog_cloud.empty() ? a.catalog_cloud : cost::cloud_from_catalog_content(text).value_or(ref->first);
    auto parsed = cost::parse_skypilot_csv(text, cloud, a.catalog);
    if (!parsed) fail(ctx, "--catalog '" + a.catalog + "': " + parsed.error().message);
    imported = std::move(parsed->offers);
    catalog = &imported;
    catalog_name = "'" + a.catalog + "'";
  }
  const auto chosen = cost::breakeven_offer(*catalog, ref->first, ref->second, a.region);
  if (!chosen)
    fail(ctx, "--offer: no offer " + a.offer + (a.region.empty() ? "" : " in " + a.region) + " in " + catalog_name);
  const cost::Offer& offer = *chosen->offer;

  cost::BreakevenInput in;
  in.local.gpu_model = std::string(spec->name);
  in.local.purchase_usd = a.purchase_usd;
  in.local.setup_usd = a.setup_usd;
  in.local.lifetime_years = a.lifetime_years;
  in.local.utilisation = a.utilisation;
  in.local.power_kw = a.power_kw.value_or(spec->tdp_w / 1000.0);
  in.local.pue = a.pue;
  in.local.electricity_usd_per_kwh = a.electricity;
  in.local.maintenance_usd_per_year = a.maintenance;
  // The local GPU is compared with the offer per GPU: an 8-GPU instance's hour is 8 GPU-hours.
  in.offer = chosen->label;
  in.cloud_usd_per_hour = chosen->on_demand_usd_per_gpu_hour;
  in.cloud_spot_usd_per_hour = chosen->spot_usd_per_gpu_hour;
  in.offer_gpu = cost::offer_gpu_name(offer);
  if (a.purchase_usd < 0) fail(ctx, "--purchase-usd must be >= 0");
  auto report = cost::breakeven_report(in);
  if (!report) {
    static const std::map<std::string, std::string> kFlags{
        {"purchase_usd", "--purchase-usd"}, {"setup_usd", "--setup-usd"}, {"lifetime_years", "--lifetime-years"},
        {"utilisation", "--utilisation"},   {"power_kw", "--power-kw"},   {"pue", "--pue"},
        {"electricity_usd_per_kwh", "--electricity-usd-per-kwh"},
        {"maintenance_usd_per_year", "--maintenance-usd-per-year"}};
    fail(ctx, flag_for(kFlags, report.error().field) + ": " + report.error().message);
  }
  const auto& r = *report;
  for (const auto& w : r.warnings) *ctx.err << "warning: " << w << "\n";
  if (!a.svg.empty()) write_file(ctx, a.svg, cost::breakeven_svg(r));

  std::ostream& out = *ctx.out;
  if (ctx.output == "svg") {
    out << cost::breakeven_svg(r);
    return;
  }
  if (ctx.output == "json") {
    nlohmann::json j = r;
    j["offer_region"] = offer.region;
    j["offer_zone"] = offer.zone;
    j["spot_zone"] = chosen->spot_zone;
    j["offer_gpu_count"] = offer.gpu_count;
    j["price_source"] = offer.source;
    j["price_date"] = offer.date;
    out << j.dump(2) << "\n";
    return;
  }
  const std::vector<std::string> header{"utilisation",   "hours_per_month", "local_amortised_usd_per_hour",
                                        "local_marginal_usd_per_hour", "cloud_on_demand_usd_per_hour",
                                        "cloud_spot_usd_per_hour", "local_monthly_usd", "cloud_monthly_usd"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : r.curve)
    rows.push_back({fixed_decimal(p.utilisation, 2), fixed_decimal(p.hours_per_month, 1), fixed_decimal(p.local_amortised_usd_per_hour, 4),
                    fixed_decimal(p.local_marginal_usd_per_hour, 4), fixed_decimal(p.cloud_on_demand_usd_per_hour, 4),
                    opt_fixed(p.cloud_spot_usd_per_hour, 4, ""), fixed_decimal(p.local_monthly_usd, 2),
                    fixed_decimal(p.cloud_monthly_usd, 2)});
  if (ctx.output == "csv") {
    // One tidy table: the curve, with the headline figures repeated on every row.
    std::vector<std::string> h = header;
    for (const char* k : {"breakeven_hours", "breakeven_hours_per_month", "utilisation_threshold", "payback_months"})
      h.emplace_back(k);
    for (auto& row : rows) {
      row.push_back(opt_fixed(r.on_demand.breakeven_hours, 2, ""));
      row.push_back(opt_fixed(r.on_demand.breakeven_hours_per_month, 2, ""));
      row.push_back(opt_fixed(r.on_demand.utilisation_threshold, 5, ""));
      row.push_back(opt_fixed(r.on_demand.payback_months, 2, ""));
    }
    print_csv(out, h, rows);
    return;
  }
  const auto& g = in.local;
  out << g.gpu_model << " bought for $" << fixed_decimal(g.purchase_usd + g.setup_usd, 2) << " (" << fixed_decimal(g.lifetime_years, 1)
      << " years, " << fixed_decimal(100 * g.utilisation, 0) << "% utilisation, " << fixed_decimal(g.power_kw, 3) << " kW x PUE "
      << fixed_decimal(g.pue, 2) << " at $" << fixed_decimal(g.electricity_usd_per_kwh, 3) << "/kWh, maintenance $"
      << fixed_decimal(g.maintenance_usd_per_year, 0) << "/year)\n";
  out << "against " << in.offer << " in " << offer.region << ": on-demand $" << fixed_decimal(in.cloud_usd_per_hour, 4) << "/h"
      << (in.cloud_spot_usd_per_hour ? ", spot $" + fixed_decimal(*in.cloud_spot_usd_per_hour, 4) + "/h" : "")
      << " (" << offer.source << (offer.date.empty() ? "" : ", " + offer.date) << ")\n";
  out << "local hour: $" << fixed_decimal(cost::local_hourly_cost(g, cost::LocalPricing::amortised), 4) << " amortised, $"
      << fixed_decimal(cost::local_hourly_cost(g, cost::LocalPricing::marginal), 4) << " marginal\n";
  auto headline = [&](const char* label, const cost::BreakevenFigures& f) {
    out << label << ": breakeven_hours " << opt_fixed(f.breakeven_hours, 1, "never") << ", "
        << opt_fixed(f.breakeven_hours_per_month, 1, "never") << " h/month (utilisation "
        << (f.utilisation_threshold ? fixed_decimal(100 * *f.utilisation_threshold, 2) + "%" : std::string("never"))
        << "), payback " << opt_fixed(f.payback_months, 1, "never") << " months"
        << (f.breaks_even_within_lifetime ? "" : " - does not pay off within the lifetime") << "\n";
  };
  headline("vs on-demand", r.on_demand);
  if (r.spot) headline("vs spot", *r.spot);
  out << "\n";
  print_table(out, header, rows);
}

}  // namespace

void add_breakeven_command(CLI::App& report, CliContext& ctx) {
  auto args = std::make_shared<BreakevenArgs>();
  auto* be = report.add_subcommand("breakeven", "Owning a GPU against renting one (no daemon needed)");
  be->add_option("--gpu", args->gpu, "the owned GPU model (e.g. V100, RTX4090, A100-80GB)")->required();
  be->add_option("--purchase-usd", args->purchase_usd, "purchase price per GPU")->required();
  be->add_option("--offer", args->offer, "the cloud offer, CLOUD:INSTANCE (e.g. aws:p3.2xlarge)")->required();
  be->add_option("--region", args->region, "the offer's region (default: its cheapest)");
  be->add_option("--catalog", args->catalog, "a SkyPilot-format catalog CSV (default: the built-in catalog)");
  be->add_option("--catalog-cloud", args->catalog_cloud, "the cloud of --catalog (default: the offer's)");
  be->add_option("--setup-usd", args->setup_usd, "setup cost per GPU (default 0)");
  be->add_option("--power-kw", args->power_kw, "power per GPU under load, kW (default: the GPU's TDP)");
  be->add_option("--pue", args->pue, "power usage effectiveness (default 1.0)");
  be->add_option("--electricity-usd-per-kwh", args->electricity, "electricity price (default 0.15)");
  be->add_option("--lifetime-years", args->lifetime_years, "amortisation period (default 4)");
  be->add_option("--utilisation", args->utilisation, "expected share of hours in use, 0-1 (default 0.5)");
  be->add_option("--maintenance-usd-per-year", args->maintenance, "per GPU (default 0)");
  be->add_option("--svg", args->svg, "also write the chart to this SVG file");
  be->add_option("-o,--output", ctx.output, "table (default), json, csv or svg");
  be->callback([&ctx, args] { run_breakeven(ctx, *args); });
}

}  // namespace jobctl::cli
