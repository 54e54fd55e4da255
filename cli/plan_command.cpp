// jobctl report plan --from DATE [--to DATE] [--gpu MODEL] [--purchase-usd X] [--setup-usd]
//                    [--lifetime-years] [--power-kw] [--pue] [--electricity-usd-per-kwh]
//                    [--maintenance-usd-per-year] [--utilisation] [--max-extra-gpus K]
//                    [--max-wait-hours H] [--svg FILE] [-o table|json|csv|svg]
// How many GPUs of a model to own: jobctld replays a period's jobs with 0..K more owned GPUs.
#include <CLI/CLI.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/fixed_decimal.h"
#include "base/readable.h"
#include "base/utc_time.h"
#include "cli/cost_command_support.h"
#include "cli/table.h"
#include "client/api_client.h"
#include "client/http_client.h"
#include "cost/fleet_plan.h"
#include "cost/fleet_plan_chart.h"

namespace jobctl::cli {

namespace {

struct PlanArgs {
  std::string from, to, gpu, svg;
  std::optional<double> purchase_usd, setup_usd, lifetime_years, power_kw, pue, electricity, maintenance, utilisation;
  std::optional<int> max_extra_gpus;
  std::optional<double> max_wait_hours;
};

// The daemon's field names, as this command's flags.
std::string plan_flag(const std::string& field) {
  static const std::map<std::string, std::string> kFlags{
      {"from", "--from"}, {"to", "--to"}, {"gpu", "--gpu"}, {"purchase_usd", "--purchase-usd"},
      {"setup_usd", "--setup-usd"}, {"lifetime_years", "--lifetime-years"}, {"power_kw", "--power-kw"},
      {"pue", "--pue"}, {"electricity_usd_per_kwh", "--electricity-usd-per-kwh"},
      {"maintenance_usd_per_year", "--maintenance-usd-per-year"}, {"utilisation", "--utilisation"},
      {"max_extra_gpus", "--max-extra-gpus"}, {"max_wait_hours", "--max-wait-hours"}};
  return flag_for(kFlags, field);
}

void run_report_plan(CliContext& ctx, const PlanArgs& a) {
  check_output(ctx, {"table", "json", "csv", "svg"});
  // Ranges checked here too, so that a bad flag is named before the daemon is asked.
  auto check = [&](const std::optional<double>& v, const char* flag, bool ok, const char* rule) {
    if (v && !(std::isfinite(*v) && ok)) fail(ctx, std::string(flag) + " " + rule);
  };
  check(a.purchase_usd, "--purchase-usd", a.purchase_usd.value_or(0) >= 0, "must be >= 0");
  check(a.setup_usd, "--setup-usd", a.setup_usd.value_or(0) >= 0, "must be >= 0");
  check(a.lifetime_years, "--lifetime-years", a.lifetime_years.value_or(1) > 0, "must be > 0");
  check(a.power_kw, "--power-kw", a.power_kw.value_or(0) >= 0, "must be >= 0");
  check(a.pue, "--pue", a.pue.value_or(1) >= 1, "must be >= 1");
  check(a.electricity, "--electricity-usd-per-kwh", a.electricity.value_or(0) >= 0, "must be >= 0");
  check(a.maintenance, "--maintenance-usd-per-year", a.maintenance.value_or(0) >= 0, "must be >= 0");
  check(a.utilisation, "--utilisation", a.utilisation.value_or(1) > 0 && a.utilisation.value_or(1) <= 1, "must be in (0, 1]");
  check(a.max_wait_hours, "--max-wait-hours", a.max_wait_hours.value_or(0) >= 0, "must be >= 0");
  if (a.max_extra_gpus && (*a.max_extra_gpus < 0 || *a.max_extra_gpus > cost::kMaxPlanExtraGpus))
    fail(ctx, "--max-extra-gpus must be 0 to " + std::to_string(cost::kMaxPlanExtraGpus));

  std::string path = "/v1/reports/plan?from=" + date_arg_ms(ctx, "--from", a.from);
  if (auto t = date_arg_ms(ctx, "--to", a.to); !t.empty()) path += "&to=" + t;
  if (!a.gpu.empty()) path += "&gpu=" + client::url_encode(a.gpu);
  auto add = [&](const char* key, const std::optional<double>& v) {
    if (v) path += std::string("&") + key + "=" + fixed_decimal(*v, 6);
  };
  add("purchase_usd", a.purchase_usd);
  add("setup_usd", a.setup_usd);
  add("lifetime_years", a.lifetime_years);
  add("power_kw", a.power_kw);
  add("pue", a.pue);
  add("electricity_usd_per_kwh", a.electricity);
  add("maintenance_usd_per_year", a.maintenance);
  add("utilisation", a.utilisation);
  add("max_wait_hours", a.max_wait_hours);
  if (a.max_extra_gpus) path += "&max_extra_gpus=" + std::to_string(*a.max_extra_gpus);

  client::HttpClient http(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
  auto answer = http.request("GET", path);
  if (!answer) fail(ctx, "cannot reach jobctld at " + ctx.server + ": " + answer.error().message, kIoError);
  auto j = client::json_from_response(*answer);
  if (!j) {
    // A refused input names its query parameter: say it as the flag, and exit as for bad input.
    const Error& e = j.error();
    if (e.code == ErrorCode::invalid_argument) fail(ctx, plan_flag(e.field) + ": " + e.message);
    fail(ctx, e.message + (e.field.empty() ? "" : " (" + e.field + ")"), kIoError);
  }
  auto plan = must_ok(ctx, cost::fleet_plan_from_json(*j));
  if (!a.svg.empty()) write_file(ctx, a.svg, cost::fleet_plan_svg(plan));
  std::ostream& out = *ctx.out;
  if (ctx.output == "json") { out << j->dump(2) << "\n"; return; }
  if (ctx.output == "csv") { out << cost::fleet_plan_csv(plan); return; }
  if (ctx.output == "svg") { out << cost::fleet_plan_svg(plan); return; }

  const auto& in = plan.input;
  const auto& today = plan.rows.front();
  const auto& best = plan.rows[static_cast<size_t>(plan.cheapest_extra_gpus)];
  out << in.gpu_model << " fleet plan, " << format_utc(in.from_ms, UtcStyle::readable) << " to "
      << format_utc(in.to_ms, UtcStyle::readable) << " UTC (" << fixed_decimal(plan.period_hours / 24.0, 1) << " days): "
      << readable::count(plan.job_count, "job") << ", " << fixed_decimal(plan.demand_gpu_hours, 1) << " GPU-hours, at most "
      << fixed_decimal(plan.peak_concurrent_gpus, 0) << " GPUs at once\n";
  // Below the printed precision the drift is shown as +0.00%, not as a rounding's -0.00%.
  const double drift = std::abs(plan.replay_vs_ledger) < 5e-5 ? 0.0 : plan.replay_vs_ledger;
  out << "ledger total " << readable::usd(in.ledger_usd) << "; the replay of today's fleet (" << in.owned_gpus_today
      << " owned) " << readable::usd(today.total_usd) << " (" << (drift >= 0 ? "+" : "") << fixed_decimal(100 * drift, 2)
      << "%)\n";
  if (plan.job_count == 0) {
    out << "no " << in.gpu_model << " jobs arrived in this period: no demand to serve, so a GPU bought only adds its "
        << "purchase and power; cheapest: buy none\n";
  } else if (plan.cheapest_extra_gpus == 0) {
    out << "cheapest: buy none - today's fleet of " << in.owned_gpus_today << " is the cheapest over this history\n";
  } else {
    out << "cheapest: buy " << plan.cheapest_extra_gpus << " (" << best.owned_gpus << " owned): " << readable::usd(best.total_usd)
        << " over the period, saving " << readable::usd(plan.saving_usd) << " (" << readable::usd(plan.saving_usd_per_month)
        << "/month) against today's fleet; payback "
        << (plan.payback_months ? fixed_decimal(*plan.payback_months, 1) + " months" : std::string("never")) << "\n";
  }
  out << "demand by hour of day, GPU-hours (UTC):";
  for (size_t h = 0; h < plan.demand_by_hour_of_day.size(); ++h)
    out << (h % 12 == 0 ? "\n  " : "  ") << (h < 10 ? "0" : "") << h << "h " << fixed_decimal(plan.demand_by_hour_of_day[h], 1);
  out << "\nassumptions: " << cost::fleet_plan_assumptions(plan) << "\n\n";
  Table t({"buy", "owned", "total", "purchase", "power+maint.", "cloud", "today's GPUs", "utilisation", "jobs owned",
           "jobs cloud", "waited", "max wait", "deadlines missed", ""});
  for (const auto& r : plan.rows)
    t.add_row({std::to_string(r.extra_gpus), std::to_string(r.owned_gpus), readable::usd(r.total_usd),
               readable::usd(r.purchase_usd), readable::usd(r.power_usd + r.maintenance_usd), readable::usd(r.cloud_usd),
               readable::usd(r.fleet_usd), readable::percent(r.utilisation), std::to_string(r.jobs_owned),
               std::to_string(r.jobs_cloud), std::to_string(r.jobs_waited),
               r.jobs_waited ? readable::duration_hours(r.wait_hours_max) : "-",
               std::to_string(r.deadlines_missed),
               r.extra_gpus == 0 ? (r.extra_gpus == plan.cheapest_extra_gpus ? "today, cheapest" : "today")
                                 : (r.extra_gpus == plan.cheapest_extra_gpus ? "cheapest" : "")});
  t.print(out);
}

}  // namespace

void add_plan_command(CLI::App& report, CliContext& ctx) {
  auto pa = std::make_shared<PlanArgs>();
  auto* plan = report.add_subcommand(
      "plan", "How many GPUs of a model to own: the jobs of a period replayed with 0..K more owned GPUs");
  plan->add_option("--from", pa->from, "period start: YYYY-MM-DD (UTC) or epoch milliseconds")->required();
  plan->add_option("--to", pa->to, "period end, exclusive (default: now)");
  plan->add_option("--gpu", pa->gpu, "the GPU model (default: the one with the most GPU-hours of demand)");
  plan->add_option("--purchase-usd", pa->purchase_usd, "purchase price per GPU (default: cost.local_gpus's)");
  plan->add_option("--setup-usd", pa->setup_usd, "setup cost per GPU (default 0)");
  plan->add_option("--lifetime-years", pa->lifetime_years, "amortisation period (default 4)");
  plan->add_option("--power-kw", pa->power_kw, "power per GPU under load, kW (default: the GPU's TDP)");
  plan->add_option("--pue", pa->pue, "power usage effectiveness (default 1.0)");
  plan->add_option("--electricity-usd-per-kwh", pa->electricity, "electricity price (default: the daemon's, 0.15)");
  plan->add_option("--maintenance-usd-per-year", pa->maintenance, "per GPU (default 0)");
  plan->add_option("--utilisation", pa->utilisation,
                   "the utilisation placement prices a bought GPU at, 0-1 (default 0.5; the replay measures the real one)");
  plan->add_option("--max-extra-gpus", pa->max_extra_gpus, "K: replay 0..K more GPUs (default: the peak demand + 1, at least 4)");
  plan->add_option("--max-wait-hours", pa->max_wait_hours, "how long a job with no deadline waits for an owned GPU (default 1)");
  plan->add_option("--svg", pa->svg, "also write the chart (cost against GPUs bought) to this SVG file");
  plan->add_option("-o,--output", ctx.output, "table (default), json, csv or svg");
  plan->callback([&ctx, pa] { run_report_plan(ctx, *pa); });
}

}  // namespace jobctl::cli
