// jobctl simulate --trace FILE [--trace FILE...] --policy up|greedy|on-demand|local-first|adaptive|lifetime|optimal|all[,...]
//                 --compute-hours H --deadline-hours D [--changeover-hours d] [--spot-price S]
//                 --on-demand-price P [--start-hours T] [--spot-price-from-trace]
//                 [--checkpoint-gb G --transfer-gbps B]
//                 [--local-trace FILE --local-price L] [--timeline] [-o table|json|csv]
// A spot trace replayed under deadline policies, with no daemon; several traces are the zones of
// one region (a policy that moves, "lifetime" or "optimal", may move between them, paying the
// checkpoint's transfer on top of the changeover). The files are read here (scheduler/ takes text).
#include <CLI/CLI.hpp>

#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fixed_decimal.h"
#include "cli/cost_command_support.h"
#include "scheduler/deadline_policy.h"
#include "scheduler/optimal_policy.h"
#include "scheduler/simulation_json.h"
#include "scheduler/spot_simulator.h"
#include "scheduler/spot_trace.h"

namespace jobctl::cli {

namespace {

struct SimulateArgs {
  std::vector<std::string> traces;
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
  double checkpoint_gb = 0;
  double transfer_gbps = 1;
};

std::string flag_for_field(const std::string& field) {
  static const std::map<std::string, std::string> kFlags{
      {"compute_hours", "--compute-hours"},     {"deadline_hours", "--deadline-hours"},
      {"changeover_hours", "--changeover-hours"}, {"spot_usd_per_hour", "--spot-price"},
      {"on_demand_usd_per_hour", "--on-demand-price"}, {"start_hours", "--start-hours"},
      {"local_usd_per_hour", "--local-price"},  {"local_trace", "--local-trace"},
      {"move_hours", "--checkpoint-gb"},        {"trace", "--trace"}};
  return flag_for(kFlags, field);
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

  std::vector<scheduler::SpotTrace> zones;
  for (const auto& file : a.traces) {
    auto t = scheduler::parse_spot_trace(read_file(ctx, file, "trace"));
    if (!t) fail(ctx, "--trace '" + file + "': " + t.error().message);
    zones.push_back(std::move(*t));
  }
  if (zones.size() > 1 && !a.local_trace.empty()) fail(ctx, "--local-trace: takes one --trace, not several zones");
  const scheduler::SpotTrace* trace = &zones.front();
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
  if (!(a.checkpoint_gb >= 0)) fail(ctx, "--checkpoint-gb: must be >= 0");
  if (!(a.transfer_gbps > 0)) fail(ctx, "--transfer-gbps: must be > 0");
  c.move_hours = scheduler::checkpoint_transfer_hours(a.checkpoint_gb, a.transfer_gbps);
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
      auto optimal = scheduler::make_optimal_zones_policy(zones, c);
      if (!optimal) fail(ctx, flag_for_field(optimal.error().field) + ": " + optimal.error().message);
      policy = std::move(*optimal);
    } else {
      policy = scheduler::make_deadline_policy(name);
    }
    auto r = scheduler::simulate_zones(zones, c, *policy, local ? &*local : nullptr);
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
                                        "local_hours", "idle_hours",      "preemptions",        "changeovers",
                                        "moves"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : results) {
    const bool csv = ctx.output == "csv";
    rows.push_back({r.policy, fixed_decimal(r.cost_usd, 2), fixed_decimal(r.on_demand_cost_usd, 2),
                    csv ? fixed_decimal(r.savings, 4) : fixed_decimal(100 * r.savings, 1) + "%",
                    r.deadline_met ? (csv ? "true" : "yes") : (csv ? "false" : "NO"), fixed_decimal(r.finish_hours, 2),
                    fixed_decimal(r.spot_hours, 2), fixed_decimal(r.on_demand_hours, 2), fixed_decimal(r.local_hours, 2),
                    fixed_decimal(r.idle_hours, 2), std::to_string(r.preemptions), std::to_string(r.changeovers),
                    std::to_string(r.moves)});
  }
  if (ctx.output == "csv") {
    print_csv(out, header, rows);
    return;
  }
  std::string names;
  for (const auto& file : a.traces) names += (names.empty() ? "" : ", ") + file;
  out << (zones.size() > 1 ? "zones " : "trace ") << names << " from " << fixed_decimal(a.start_hours, 2) << " h: " << fixed_decimal(c.compute_hours, 2)
      << " h of compute by " << fixed_decimal(c.deadline_hours, 2) << " h, changeover " << fixed_decimal(c.changeover_hours, 2)
      << " h, spot $" << fixed_decimal(c.spot_usd_per_hour, 3) << (c.spot_price_from_trace ? " (from the trace)" : "")
      << "/h, on-demand $" << fixed_decimal(c.on_demand_usd_per_hour, 3) << "/h";
  if (zones.size() > 1) out << ", a move adds " << fixed_decimal(c.move_hours * 3600, 0) << " s of transfer";
  out << "\n";
  if (!results.empty() && !results[0].trace_covers_deadline)
    out << "note: the trace covers only " << fixed_decimal(results[0].trace_hours_from_start, 2)
        << " h from the start; spot counts as unavailable after its end\n";
  print_table(out, header, rows);
  if (a.timeline) {
    for (const auto& r : results) {
      out << "\n" << r.policy << " timeline:\n";
      for (const auto& s : r.segments) {
        out << "  " << fixed_decimal(s.start_hours, 3) << " - " << fixed_decimal(s.end_hours, 3) << " h  "
            << scheduler::to_string(s.capacity);
        if (zones.size() > 1 && s.capacity != scheduler::Capacity::none) out << " in zone " << s.zone;
        out << "\n";
      }
    }
  }
}

}  // namespace

void add_simulate_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<SimulateArgs>();
  auto* sim = app.add_subcommand("simulate", "Replay a spot trace under a deadline policy (no daemon needed)");
  sim->add_option("--trace", args->traces,
                  "spot trace JSON (skypilot-org/spot-traces format); several: the zones of one region, the first "
                  "where the job starts")
      ->required();
  sim->add_option("--policy", args->policy,
                  "up, greedy, on-demand, local-first, adaptive, lifetime (moves between zones), optimal (the "
                  "omniscient bound: knows the whole trace), or all; several separated by commas")
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
  sim->add_option("--checkpoint-gb", args->checkpoint_gb,
                  "the job's checkpoint, GB: a move to another zone transfers it (default 0)");
  sim->add_option("--transfer-gbps", args->transfer_gbps, "the transfer rate between zones, Gbit/s (default 1)");
  sim->add_flag("--timeline", args->timeline, "also print what ran when");
  sim->add_option("-o,--output", ctx.output, "table (default), json or csv");
  sim->callback([&ctx, args] { run_simulate(ctx, *args); });
}

}  // namespace jobctl::cli
