// `jobctl simulate` and `jobctl report breakeven`: the cost model from the command line, with no
// daemon. (quote, catalog and report spend talk to jobctld and join this file when it exists.)
//
//   jobctl simulate --trace FILE --policy up|greedy|on-demand|local-first|adaptive|optimal|all[,...]
//                   --compute-hours H --deadline-hours D [--changeover-hours d] [--spot-price S]
//                   --on-demand-price P [--start-hours T] [--spot-price-from-trace]
//                   [--local-trace FILE --local-price L] [--timeline] [-o table|json|csv]
//   jobctl report breakeven --gpu MODEL --purchase-usd X --offer CLOUD:INSTANCE [--region R]
//                   [--catalog FILE [--catalog-cloud CLOUD]] [--setup-usd] [--power-kw] [--pue]
//                   [--electricity-usd-per-kwh] [--lifetime-years] [--utilisation]
//                   [--maintenance-usd-per-year] [--svg FILE] [-o table|json|csv|svg]
//   jobctl report plan --from DATE [--to DATE] [--gpu MODEL] [--purchase-usd X] [--setup-usd]
//                   [--lifetime-years] [--power-kw] [--pue] [--electricity-usd-per-kwh]
//                   [--maintenance-usd-per-year] [--utilisation] [--max-extra-gpus K]
//                   [--max-wait-hours H] [--svg FILE] [-o table|json|csv|svg]   (asks jobctld)
//
// Files are read here (cost/ and scheduler/ take text). Bad input: a message naming the flag on
// stderr and exit status 2; an unreadable file: exit status 1.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>

#include <curl/curl.h>
#include <cstdio>
#include <cstring>
#include <limits>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/terminal_text.h"
#include "base/fixed_decimal.h"
#include "base/readable.h"
#include "base/strings.h"
#include "base/utc_time.h"
#include "cli/commands.h"
#include "cli/table.h"
#include "cost/breakeven.h"
#include "cost/breakeven_chart.h"
#include "cost/catalog_cloud.h"
#include "cost/cost_json.h"
#include "cost/fleet_plan.h"
#include "cost/fleet_plan_chart.h"
#include "cost/gpu_specs.h"
#include "cost/price_catalog.h"
#include "cost/spend_report.h"
#include "client/api_client.h"
#include "client/http_client.h"
#include "scheduler/deadline_policy.h"
#include "scheduler/optimal_policy.h"
#include "scheduler/simulation_json.h"
#include "scheduler/spot_simulator.h"
#include "scheduler/spot_trace.h"

namespace jobctl::cli {

namespace {

constexpr int kBadInput = 2;
constexpr int kIoError = 1;

[[noreturn]] void fail(CliContext& ctx, const std::string& message, int code = kBadInput) {
  *ctx.err << "error: " << terminal_text(message, true) << "\n";  // it may quote a server's answer
  throw CLI::RuntimeError(code);
}

std::string read_file(CliContext& ctx, const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ctx, "cannot read " + what + " '" + path + "': " + std::strerror(errno), kIoError);
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) fail(ctx, "cannot read " + what + " '" + path + "'", kIoError);
  return s.str();
}

void write_file(CliContext& ctx, const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(ctx, "cannot write '" + path + "': " + std::strerror(errno), kIoError);
  out << text;
  out.close();
  if (!out) fail(ctx, "cannot write '" + path + "'", kIoError);
}

std::string opt_fixed(const std::optional<double>& v, int decimals, const std::string& none = "-") {
  return v ? fixed_decimal(*v, decimals) : none;
}

// Aligned columns for people (cli/table.h, as every jobctl table).
void print_table(std::ostream& out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows) {
  Table t(header);
  for (const auto& r : rows) t.add_row(r);
  t.print(out);
}

void print_csv(std::ostream& out, const std::vector<std::string>& header,
               const std::vector<std::vector<std::string>>& rows) {
  auto line = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < r.size(); ++i) out << (i ? "," : "") << csv_field(r[i]);
    out << "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
}

void check_output(CliContext& ctx, std::initializer_list<std::string_view> allowed) {
  for (auto a : allowed)
    if (ctx.output == a) return;
  std::string list;
  for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  fail(ctx, "-o: unsupported output '" + ctx.output + "' for this command (one of: " + list + ")");
}

// ---------------------------------------------------------------------------------------------
// jobctl simulate

struct SimulateArgs {
  std::string trace;
  std::string policy;
  double compute_hours = 0;
  double deadline_hours = 0;
  double changeover_hours = 0.3;
  std::optional<double> spot_price;
  double on_demand_price = 0;
  double start_hours = 0;
  bool spot_price_from_trace = false;
  std::string local_trace;
  double local_price = 0;
  bool timeline = false;
};

std::string flag_for_field(const std::string& field) {
  static const std::map<std::string, std::string> kFlags{
      {"compute_hours", "--compute-hours"},     {"deadline_hours", "--deadline-hours"},
      {"changeover_hours", "--changeover-hours"}, {"spot_usd_per_hour", "--spot-price"},
      {"on_demand_usd_per_hour", "--on-demand-price"}, {"start_hours", "--start-hours"},
      {"local_usd_per_hour", "--local-price"},  {"local_trace", "--local-trace"}};
  auto it = kFlags.find(field);
  return it == kFlags.end() ? field : it->second;
}

void run_simulate(CliContext& ctx, const SimulateArgs& a) {
  check_output(ctx, {"table", "json", "csv"});
  std::vector<std::string> policies;
  {
    std::stringstream list(a.policy);
    std::string name;
    while (std::getline(list, name, ',')) {
      if (name == "all") {
        for (auto n : scheduler::deadline_policy_names())
          if (n != "local-first" || !a.local_trace.empty()) policies.emplace_back(n);
        if (a.local_trace.empty()) policies.emplace_back("optimal");
      } else if (name == "optimal" && !a.local_trace.empty()) {
        fail(ctx, "--policy optimal: plans spot and on-demand only; it takes no --local-trace");
      } else if (name != "optimal" && !scheduler::make_deadline_policy(name)) {
        std::string known;
        for (auto n : scheduler::deadline_policy_names()) known += (known.empty() ? "" : ", ") + std::string(n);
        fail(ctx, "--policy: unknown policy '" + name + "' (one of: " + known + ", optimal, all)");
      } else {
        policies.push_back(name);
      }
    }
    if (policies.empty()) fail(ctx, "--policy: name at least one policy");
  }

  auto trace = scheduler::parse_spot_trace(read_file(ctx, a.trace, "trace"));
  if (!trace) fail(ctx, "--trace '" + a.trace + "': " + trace.error().message);
  std::optional<scheduler::SpotTrace> local;
  if (!a.local_trace.empty()) {
    auto l = scheduler::parse_spot_trace(read_file(ctx, a.local_trace, "local trace"));
    if (!l) fail(ctx, "--local-trace '" + a.local_trace + "': " + l.error().message);
    local = std::move(*l);
  }

  scheduler::SimulationConfig c;
  c.compute_hours = a.compute_hours;
  c.deadline_hours = a.deadline_hours;
  c.changeover_hours = a.changeover_hours;
  c.on_demand_usd_per_hour = a.on_demand_price;
  c.start_hours = a.start_hours;
  c.local_usd_per_hour = a.local_price;
  c.spot_price_from_trace = a.spot_price_from_trace;
  if (a.spot_price) {
    c.spot_usd_per_hour = *a.spot_price;
  } else if (a.spot_price_from_trace && !trace->prices.empty()) {
    c.spot_usd_per_hour = trace->prices.front();
  } else {
    fail(ctx, "--spot-price is required (or --spot-price-from-trace with a trace that has prices)");
  }
  if (a.spot_price_from_trace && trace->prices.empty())
    fail(ctx, "--spot-price-from-trace: the trace has no prices");

  std::vector<scheduler::SimulationResult> results;
  for (const auto& name : policies) {
    std::unique_ptr<scheduler::DeadlinePolicy> policy;
    if (name == "optimal") {
      auto optimal = scheduler::make_optimal_policy(*trace, c);
      if (!optimal) fail(ctx, flag_for_field(optimal.error().field) + ": " + optimal.error().message);
      policy = std::move(*optimal);
    } else {
      policy = scheduler::make_deadline_policy(name);
    }
    auto r = scheduler::simulate(*trace, c, *policy, local ? &*local : nullptr);
    if (!r) fail(ctx, flag_for_field(r.error().field) + ": " + r.error().message);
    results.push_back(std::move(*r));
  }

  std::ostream& out = *ctx.out;
  if (ctx.output == "json") {
    if (results.size() == 1) {
      out << scheduler::simulation_json(results[0], a.timeline).dump(2) << "\n";
    } else {
      nlohmann::json all = nlohmann::json::array();
      for (const auto& r : results) all.push_back(scheduler::simulation_json(r, a.timeline));
      out << all.dump(2) << "\n";
    }
    return;
  }
  const std::vector<std::string> header{"policy",      "cost_usd",        "on_demand_cost_usd", "savings",
                                        "deadline_met", "finish_hours",   "spot_hours",         "on_demand_hours",
                                        "local_hours", "idle_hours",      "preemptions",        "changeovers"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : results) {
    const bool csv = ctx.output == "csv";
    rows.push_back({r.policy, fixed_decimal(r.cost_usd, 2), fixed_decimal(r.on_demand_cost_usd, 2),
                    csv ? fixed_decimal(r.savings, 4) : fixed_decimal(100 * r.savings, 1) + "%",
                    r.deadline_met ? (csv ? "true" : "yes") : (csv ? "false" : "NO"), fixed_decimal(r.finish_hours, 2),
                    fixed_decimal(r.spot_hours, 2), fixed_decimal(r.on_demand_hours, 2), fixed_decimal(r.local_hours, 2),
                    fixed_decimal(r.idle_hours, 2), std::to_string(r.preemptions), std::to_string(r.changeovers)});
  }
  if (ctx.output == "csv") {
    print_csv(out, header, rows);
    return;
  }
  out << "trace " << a.trace << " from " << fixed_decimal(a.start_hours, 2) << " h: " << fixed_decimal(c.compute_hours, 2)
      << " h of compute by " << fixed_decimal(c.deadline_hours, 2) << " h, changeover " << fixed_decimal(c.changeover_hours, 2)
      << " h, spot $" << fixed_decimal(c.spot_usd_per_hour, 3) << (c.spot_price_from_trace ? " (from the trace)" : "")
      << "/h, on-demand $" << fixed_decimal(c.on_demand_usd_per_hour, 3) << "/h\n";
  if (!results.empty() && !results[0].trace_covers_deadline)
    out << "note: the trace covers only " << fixed_decimal(results[0].trace_hours_from_start, 2)
        << " h from the start; spot counts as unavailable after its end\n";
  print_table(out, header, rows);
  if (a.timeline) {
    for (const auto& r : results) {
      out << "\n" << r.policy << " timeline:\n";
      for (const auto& s : r.segments)
        out << "  " << fixed_decimal(s.start_hours, 3) << " - " << fixed_decimal(s.end_hours, 3) << " h  "
            << scheduler::to_string(s.capacity) << "\n";
    }
  }
}

// ---------------------------------------------------------------------------------------------
// jobctl report breakeven

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
  if (a.purchase_usd < 0) fail(ctx, "--purchase-usd must be >= 0");
  auto report = cost::breakeven_report(in);
  if (!report) {
    static const std::map<std::string, std::string> kFlags{
        {"purchase_usd", "--purchase-usd"}, {"setup_usd", "--setup-usd"}, {"lifetime_years", "--lifetime-years"},
        {"utilisation", "--utilisation"},   {"power_kw", "--power-kw"},   {"pue", "--pue"},
        {"electricity_usd_per_kwh", "--electricity-usd-per-kwh"},
        {"maintenance_usd_per_year", "--maintenance-usd-per-year"}};
    auto it = kFlags.find(report.error().field);
    fail(ctx, (it == kFlags.end() ? report.error().field : it->second) + ": " + report.error().message);
  }
  const auto& r = *report;
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

// ------------------------------------------------------------------ daemon-backed: quote, spend

template <class T>
T must_ok(CliContext& ctx, Expected<T> r) {
  if (!r) fail(ctx, r.error().message + (r.error().field.empty() ? "" : " (" + r.error().field + ")"), kIoError);
  return std::move(*r);
}

nlohmann::json daemon_call(CliContext& ctx, std::string_view method, const std::string& path,
                           std::string_view body = {}) {
  client::HttpClient http(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
  auto r = http.request(method, path, body);
  if (!r) fail(ctx, "cannot reach jobctld at " + ctx.server + ": " + r.error().message, kIoError);
  return must_ok(ctx, client::json_from_response(*r));
}

std::string date_arg_ms(CliContext& ctx, const std::string& flag, const std::string& text) {
  // Milliseconds since the epoch, or YYYY-MM-DD (UTC midnight).
  if (text.empty()) return "";
  if (text.find('-') == std::string::npos) {
    for (char c : text)
      if (c < '0' || c > '9') fail(ctx, flag + ": expected YYYY-MM-DD or milliseconds since the epoch");
    return text;
  }
  int y = 0, m = 0, d = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%d", &y, &m, &d) != 3 || m < 1 || m > 12 || d < 1 || d > 31)
    fail(ctx, flag + ": expected YYYY-MM-DD or milliseconds since the epoch");
  const auto days = std::chrono::sys_days(std::chrono::year(y) / m / d);
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(days.time_since_epoch()).count());
}

void run_quote(CliContext& ctx, const std::string& spec_file, bool all) {
  check_output(ctx, {"table", "json"});
  const std::string spec = read_file(ctx, spec_file, "job spec");
  nlohmann::json q = daemon_call(ctx, "POST", "/v1/quote", spec);
  if (ctx.output == "json") {
    *ctx.out << q.dump(2) << "\n";
    return;
  }
  print_placement(*ctx.out, q, all);
}

void run_report_spend(CliContext& ctx, const std::string& from, const std::string& to, const std::string& group_by,
                      const std::string& svg) {
  check_output(ctx, {"table", "json", "csv", "svg"});
  std::string path = "/v1/reports/spend?group_by=" + group_by;
  if (auto f = date_arg_ms(ctx, "--from", from); !f.empty()) path += "&from=" + f;
  if (auto t = date_arg_ms(ctx, "--to", to); !t.empty()) path += "&to=" + t;
  nlohmann::json j = daemon_call(ctx, "GET", path);
  auto report = must_ok(ctx, cost::spend_report_from_json(j));
  if (!svg.empty()) write_file(ctx, svg, cost::spend_svg(report));
  if (ctx.output == "json") { *ctx.out << j.dump(2) << "\n"; return; }
  if (ctx.output == "csv") { *ctx.out << cost::spend_csv(report); return; }
  if (ctx.output == "svg") { *ctx.out << cost::spend_svg(report); return; }
  Table t({group_by, "time", "spent", "all on-demand", "savings", "saved"});
  auto add = [&](const cost::SpendGroup& g) {
    t.add_row({g.key, readable::duration_hours(g.seconds / 3600.0), readable::usd(g.usd),
               readable::usd(g.on_demand_usd), readable::usd(g.savings_usd()), readable::percent(g.savings_fraction())});
  };
  for (const auto& g : report.groups) add(g);
  add(report.total);
  t.print(*ctx.out);
}

// ------------------------------------------------------------------ report plan

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
  auto it = kFlags.find(field);
  return it == kFlags.end() ? field : it->second;
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
      << plan.job_count << " jobs, " << fixed_decimal(plan.demand_gpu_hours, 1) << " GPU-hours, at most "
      << fixed_decimal(plan.peak_concurrent_gpus, 0) << " GPUs at once\n";
  // Below the printed precision the drift is shown as +0.00%, not as a rounding's -0.00%.
  const double drift = std::abs(plan.replay_vs_ledger) < 5e-5 ? 0.0 : plan.replay_vs_ledger;
  out << "ledger total " << readable::usd(in.ledger_usd) << "; the replay of today's fleet (" << in.owned_gpus_today
      << " owned) " << readable::usd(today.total_usd) << " (" << (drift >= 0 ? "+" : "") << fixed_decimal(100 * drift, 2)
      << "%)\n";
  if (plan.cheapest_extra_gpus == 0) {
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

// ------------------------------------------------------------------ catalog

size_t append_body(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

std::string default_catalog_dir() {
  if (const char* d = std::getenv("JOBCTL_DATA_DIR"); d && *d) return std::string(d) + "/catalog";
  return "data/catalog";
}

void run_catalog_update(CliContext& ctx, const std::string& url, std::string cloud, std::string dir) {
  if (dir.empty()) dir = default_catalog_dir();
  CURL* curl = curl_easy_init();
  if (!curl) fail(ctx, "cannot start libcurl", kIoError);
  std::string body;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 120L);
  curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(256) << 20);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) fail(ctx, "--from: cannot fetch " + url + ": " + curl_easy_strerror(rc), kIoError);
  if (status != 0 && (status < 200 || status >= 300))
    fail(ctx, "--from: " + url + " answered HTTP " + std::to_string(status), kIoError);
  if (cloud.empty()) {
    std::string name = url.substr(url.find_last_of('/') + 1);
    const size_t cut = name.find_first_of("_.-");
    cloud = name.substr(0, cut);
    // SkyPilot's layout: .../catalogs/v7/<cloud>/vms.csv
    if (cloud == "vms") {
      const std::string parent = url.substr(0, url.find_last_of('/'));
      cloud = parent.substr(parent.find_last_of('/') + 1);
    }
  }
  if (cloud.empty()) fail(ctx, "--cloud is required: the cloud cannot be told from the URL");
  auto parsed = cost::parse_skypilot_csv(body, cloud, url);  // validate before storing anything
  if (!parsed) fail(ctx, "--from: " + url + " is not a usable catalog: " + parsed.error().message);
  if (parsed->offers.empty()) fail(ctx, "--from: " + url + " has no usable offers");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(ctx, "cannot create " + dir + ": " + ec.message(), kIoError);
  const std::string target = dir + "/" + cloud + ".csv";
  const std::string temp = target + ".tmp";
  write_file(ctx, temp, body);
  std::filesystem::rename(temp, target, ec);  // atomic: readers see the old file or the new one
  if (ec) fail(ctx, "cannot replace " + target + ": " + ec.message(), kIoError);
  *ctx.out << "stored " << parsed->offers.size() << " offers for " << cloud << " in " << target;
  if (!parsed->warnings.empty()) *ctx.out << " (" << parsed->warnings.size() << " rows skipped)";
  *ctx.out << "\n";
}

void run_catalog_ls(CliContext& ctx, std::string dir, const std::string& gpu) {
  check_output(ctx, {"table", "json", "csv"});
  if (dir.empty()) dir = default_catalog_dir();
  std::vector<cost::Offer> offers = cost::seed_catalog();
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".csv") files.push_back(it->path());
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    // The cloud is read from the content (SkyPilot names every file vms.csv); the file name only
    // when the content does not say.
    const std::string text = read_file(ctx, path.string(), "catalog");
    const std::string cloud = cost::cloud_from_catalog_content(text).value_or(cost::cloud_from_file_name(path.string()));
    auto parsed = cost::parse_skypilot_csv(text, cloud, path.string());
    if (!parsed) fail(ctx, path.string() + ": " + parsed.error().message);
    for (const auto& w : parsed->warnings) *ctx.err << "warning: " << path.string() << ": " << w << "\n";
    for (auto& o : parsed->offers) offers.push_back(std::move(o));
  }
  if (!gpu.empty()) {
    // A request, as resources.gpu reads it: "A100" every A100, "A100-80GB" the 80 GB ones.
    auto want = cost::parse_gpu_request(gpu);
    if (!want) fail(ctx, "--gpu: " + want.error().message);
    std::erase_if(offers, [&](const cost::Offer& o) {
      const cost::GpuSpec* spec = cost::identify_gpu(o.gpu_model, o.gpu_memory_gb);
      return !spec || !want->matches(*spec);
    });
  }
  if (ctx.output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& o : offers) j.push_back(o);
    *ctx.out << j.dump(2) << "\n";
    return;
  }
  Table t({"offer", "region", "gpu", "gpus", "GiB/gpu", "on-demand $/h", "spot $/h", "source"}, 40);
  for (const auto& o : offers)
    t.add_row({o.name(), o.region + (o.zone.empty() ? "" : "/" + o.zone), o.gpu_model, std::to_string(o.gpu_count),
               fixed_decimal(o.gpu_memory_gb, 1), fixed_decimal(o.on_demand_usd_per_hour, 4),
               o.spot_usd_per_hour ? fixed_decimal(*o.spot_usd_per_hour, 4) : "-", o.source});
  if (ctx.output == "csv") {
    *ctx.out << "offer,region,gpu,gpus,on_demand_usd_per_hour,spot_usd_per_hour\n";
    for (const auto& o : offers)
      *ctx.out << o.name() << "," << o.region << "," << o.gpu_model << "," << o.gpu_count << ","
               << o.on_demand_usd_per_hour << "," << (o.spot_usd_per_hour ? fixed_decimal(*o.spot_usd_per_hour, 4) : "") << "\n";
    return;
  }
  t.print(*ctx.out);
}

}  // namespace

void print_placement(std::ostream& out, const nlohmann::json& p, bool all) {
  if (!p.is_object()) return;
  const nlohmann::json rows = p.contains("candidates") && p["candidates"].is_array() ? p["candidates"] : nlohmann::json::array();
  auto rejected = [](const nlohmann::json& c) { return c.contains("rejection") && c["rejection"].is_string(); };
  auto cost = [](const nlohmann::json& c) {
    return c.contains("estimated_cost_usd") && c["estimated_cost_usd"].is_number() ? c["estimated_cost_usd"].get<double>()
                                                                                    : std::numeric_limits<double>::infinity();
  };
  // "wait": until the job starts (a local worker freeing, a cloud instance booting, a Slurm queue).
  // "uses": the GPUs the job takes there, "GiB/GPU" its memory on each.
  std::vector<std::string> header{"option", "GPU", "uses", "GiB/GPU", "$/h", "wait", "est. time", "est. cost",
                                  "meets deadline", "chosen"};
  if (all) header.push_back("rejected");
  Table t(header, 48);
  auto add = [&](const nlohmann::json& c) {
    auto number = [&](const char* k) { return c.contains(k) && c[k].is_number() ? c[k].get<double>() : std::nan(""); };
    std::vector<std::string> row{c.value("label", c.value("option", "")),
                                 c.value("gpu", "") + " x" + std::to_string(c.value("gpus", 1)),
                                 std::to_string(c.value("job_gpus", c.value("gpus", 1))),
                                 std::isnan(number("memory_gib_per_gpu")) ? "-" : fixed_decimal(number("memory_gib_per_gpu"), 1),
                                 readable::usd_per_hour(number("usd_per_hour")),
                                 readable::duration_hours(number("queue_wait_hours")),
                                 readable::duration_hours(number("estimated_hours")),
                                 readable::usd(number("estimated_cost_usd")),
                                 c.value("meets_deadline", false) ? "yes" : "no",
                                 c.value("chosen", false) ? "*" : ""};
    if (all) row.push_back(c.value("rejected", c.value("rejection_reason", "")));
    t.add_row(row);
  };
  size_t fitting = 0;
  std::map<std::string, size_t> by_reason;
  for (const auto& c : rows) {
    if (rejected(c))
      ++by_reason[c["rejection"].get<std::string>()];
    else
      ++fitting;
  }
  if (all) {
    for (const auto& c : rows) add(c);
  } else {
    // The chosen option first, then the cheapest other fitting ones.
    std::vector<const nlohmann::json*> shown;
    for (const auto& c : rows)
      if (!rejected(c) && c.value("chosen", false)) shown.push_back(&c);
    std::vector<const nlohmann::json*> rest;
    for (const auto& c : rows)
      if (!rejected(c) && !c.value("chosen", false)) rest.push_back(&c);
    std::stable_sort(rest.begin(), rest.end(), [&](const auto* a, const auto* b) { return cost(*a) < cost(*b); });
    for (const auto* c : rest) {
      if (shown.size() >= kPlacementRows) break;
      shown.push_back(c);
    }
    for (const auto* c : shown) add(*c);
  }
  if (t.empty())
    out << "no option fits\n";
  else
    t.print(out);
  if (!all) {
    const size_t listed = std::min(fitting, kPlacementRows);
    if (fitting > listed)
      out << listed << " of " << fitting << " fitting options, cheapest first (--all lists every row)\n";
    if (!by_reason.empty()) {
      size_t total = 0;
      std::string parts;
      std::vector<std::pair<std::string, size_t>> sorted(by_reason.begin(), by_reason.end());
      std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
      for (const auto& [reason, n] : sorted) {
        total += n;
        parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + reason;
      }
      out << "rejected: " << total << " (" << parts << ")\n";
    }
  }
  out << "reason: " << terminal_text(p.value("reason", ""), true) << "\n";
}

namespace {

void run_gpus(CliContext& ctx) {
  check_output(ctx, {"table", "json"});
  if (ctx.output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& g : cost::gpu_specs())
      j.push_back({{"name", g.name},           {"family", g.family},         {"form", g.form},
                   {"fp32_tflops", g.fp32_tflops}, {"tf32_tflops", g.tf32_tflops}, {"fp16_tflops", g.fp16_tflops},
                   {"bf16_tflops", g.bf16_tflops}, {"memory_gb", g.memory_gb},     {"bandwidth_gbs", g.bandwidth_gbs},
                   {"tdp_w", g.tdp_w},         {"source", g.source}});
    *ctx.out << j.dump(2) << "\n";
    return;
  }
  Table t({"name", "family", "form", "memory GB", "FP32 TFLOPS", "BF16 TFLOPS", "GB/s", "TDP W"});
  for (const auto& g : cost::gpu_specs())
    t.add_row({std::string(g.name), std::string(g.family), g.form.empty() ? "-" : std::string(g.form),
               fixed_decimal(g.memory_gb, 0), fixed_decimal(g.fp32_tflops, 1), fixed_decimal(cost::peak_tflops(g, cost::Precision::bf16), 1),
               fixed_decimal(g.bandwidth_gbs, 0), fixed_decimal(g.tdp_w, 0)});
  t.print(*ctx.out);
  *ctx.out << "resources.gpu takes a family (\"A100\": any A100), a family and memory (\"A100-80GB\"), a variant "
              "(\"H100-PCIe\"), \"any\" or \"cpu\"; case, spaces and vendor words do not matter.\n";
}

}  // namespace

void add_cost_commands(CLI::App& app, CliContext& ctx) {
  // jobctl simulate
  {
    auto args = std::make_shared<SimulateArgs>();
    auto* sim = app.add_subcommand("simulate", "Replay a spot trace under a deadline policy (no daemon needed)");
    sim->add_option("--trace", args->trace, "spot trace JSON (skypilot-org/spot-traces format)")->required();
    sim->add_option("--policy", args->policy,
                    "up, greedy, on-demand, local-first, adaptive, optimal (the omniscient bound: knows the "
                    "whole trace), or all; several separated by commas")
        ->required();
    sim->add_option("--compute-hours", args->compute_hours, "hours of compute the job needs (C0)")->required();
    sim->add_option("--deadline-hours", args->deadline_hours, "deadline, hours after the start (R0)")->required();
    sim->add_option("--changeover-hours", args->changeover_hours,
                    "delay before a new instance is useful (d; default 0.3, the paper's figure)");
    sim->add_option("--spot-price", args->spot_price, "spot $/h");
    sim->add_option("--on-demand-price", args->on_demand_price, "on-demand $/h")->required();
    sim->add_option("--start-hours", args->start_hours, "where in the trace the job starts (default 0)");
    sim->add_flag("--spot-price-from-trace", args->spot_price_from_trace, "bill spot at the trace's per-tick prices");
    sim->add_option("--local-trace", args->local_trace, "availability of an owned GPU, same JSON format");
    sim->add_option("--local-price", args->local_price, "$/h of the owned GPU (with --local-trace)");
    sim->add_flag("--timeline", args->timeline, "also print what ran when");
    sim->add_option("-o,--output", ctx.output, "table (default), json or csv");
    sim->callback([&ctx, args] { run_simulate(ctx, *args); });
  }
  // jobctl report breakeven
  {
    auto* report = app.add_subcommand("report", "Cost reports");
    report->require_subcommand(1);
    auto args = std::make_shared<BreakevenArgs>();
    auto* be = report->add_subcommand("breakeven", "Owning a GPU against renting one (no daemon needed)");
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
    // jobctl report spend (from jobctld's ledger)
    struct SpendArgs { std::string from, to, group_by = "job", svg; };
    auto sp = std::make_shared<SpendArgs>();
    auto* spend = report->add_subcommand("spend", "What was spent per job, user or placement, against all on-demand");
    spend->add_option("--from", sp->from, "period start: YYYY-MM-DD (UTC) or epoch milliseconds (default: all)");
    spend->add_option("--to", sp->to, "period end, exclusive (default: now and later)");
    spend->add_option("--group-by", sp->group_by, "job (default), user or placement")
        ->check(CLI::IsMember({"job", "user", "placement"}));
    spend->add_option("--svg", sp->svg, "also write the chart to this SVG file");
    spend->add_option("-o,--output", ctx.output, "table (default), json, csv or svg");
    spend->callback([&ctx, sp] { run_report_spend(ctx, sp->from, sp->to, sp->group_by, sp->svg); });
    // jobctl report plan (from jobctld's history)
    auto pa = std::make_shared<PlanArgs>();
    auto* plan = report->add_subcommand(
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
  // jobctl quote SPEC
  {
    struct QuoteArgs { std::string file; bool all = false; };
    auto qa = std::make_shared<QuoteArgs>();
    auto* quote = app.add_subcommand("quote", "Where a job would run and what it would cost, without submitting it");
    quote->add_option("SPEC", qa->file, "job spec file (JSON)")->required();
    quote->add_flag("--all", qa->all, "list every option, rejected ones with their reason (default: the cheapest that fit)");
    quote->add_option("-o,--output", ctx.output, "table (default) or json");
    quote->callback([&ctx, qa] { run_quote(ctx, qa->file, qa->all); });
  }
  // jobctl gpus
  {
    auto* gpus = app.add_subcommand("gpus", "The GPU models jobctl knows, their figures, and the names resources.gpu takes");
    gpus->add_option("-o,--output", ctx.output, "table (default) or json");
    gpus->callback([&ctx] { run_gpus(ctx); });
  }
  // jobctl catalog update --from URL | ls
  {
    struct CatalogArgs { std::string from, cloud, dir, gpu; };
    auto ca = std::make_shared<CatalogArgs>();
    auto* catalog = app.add_subcommand("catalog", "The price catalog (built-in seed plus fetched SkyPilot CSVs)");
    catalog->require_subcommand(1);
    auto* update = catalog->add_subcommand("update", "Fetch a SkyPilot-format catalog CSV, validate it, store it");
    update->add_option("--from", ca->from, "URL of the CSV (http, https or file)")->required();
    update->add_option("--cloud", ca->cloud, "its cloud (default: from the URL)");
    update->add_option("--dir", ca->dir, "where to store it (default: $JOBCTL_DATA_DIR/catalog, else ./data/catalog)");
    update->callback([&ctx, ca] { run_catalog_update(ctx, ca->from, ca->cloud, ca->dir); });
    auto* ls = catalog->add_subcommand("ls", "List the offers: the built-in catalog plus the stored CSVs");
    ls->add_option("--dir", ca->dir, "stored catalogs (default: $JOBCTL_DATA_DIR/catalog, else ./data/catalog)");
    ls->add_option("--gpu", ca->gpu, "only offers of this GPU model");
    ls->add_option("-o,--output", ctx.output, "table (default), json or csv");
    ls->callback([&ctx, ca] { run_catalog_ls(ctx, ca->dir, ca->gpu); });
  }
}

}  // namespace jobctl::cli
