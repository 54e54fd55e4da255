// jobctl report spend [--from DATE] [--to DATE] [--group-by job|user|placement] [--svg FILE]
//                     [-o table|json|csv|svg]
// What was spent, from jobctld's ledger, against the same time at on-demand prices.
#include <CLI/CLI.hpp>

#include <memory>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/readable.h"
#include "cli/cost_command_support.h"
#include "cli/table.h"
#include "cost/spend_report.h"

namespace jobctl::cli {

namespace {

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
  // "GPU/instance time": each owned GPU and each cloud instance bills its own time, so a 4-GPU
  // job's hour reads 4 h. Savings compare only time with an on-demand equivalent (the same GPU
  // model on demand); the rest is said, not priced as another GPU.
  Table t({group_by, "GPU/instance time", "spent", "all on-demand", "savings", "saved"});
  auto add = [&](const cost::SpendGroup& g) {
    const bool known = g.has_equivalent();
    t.add_row({g.key, readable::duration_hours(g.seconds / 3600.0), readable::usd(g.usd),
               known ? readable::usd(g.on_demand_usd) : "-",
               known ? readable::usd(g.savings_usd()) : "no on-demand equivalent",
               known ? readable::percent(g.savings_fraction()) : "-"});
  };
  for (const auto& g : report.groups) add(g);
  add(report.total);
  t.print(*ctx.out);
  if (report.total.no_equivalent_usd > 0 && report.total.has_equivalent())
    *ctx.out << readable::usd(report.total.no_equivalent_usd)
             << " ran with no on-demand equivalent (a CPU, or a GPU model no on-demand offer has) and is left out"
                " of the savings.\n";
}

}  // namespace

void add_spend_command(CLI::App& report, CliContext& ctx) {
  struct SpendArgs { std::string from, to, group_by = "job", svg; };
  auto sp = std::make_shared<SpendArgs>();
  auto* spend = report.add_subcommand("spend", "What was spent per job, user or placement, against all on-demand");
  spend->add_option("--from", sp->from, "period start: YYYY-MM-DD (UTC) or epoch milliseconds (default: all)");
  spend->add_option("--to", sp->to, "period end, exclusive (default: now and later)");
  spend->add_option("--group-by", sp->group_by, "job (default), user or placement")
      ->check(CLI::IsMember({"job", "user", "placement"}));
  spend->add_option("--svg", sp->svg, "also write the chart to this SVG file");
  spend->add_option("-o,--output", ctx.output, "table (default), json, csv or svg");
  spend->callback([&ctx, sp] { run_report_spend(ctx, sp->from, sp->to, sp->group_by, sp->svg); });
}

}  // namespace jobctl::cli
