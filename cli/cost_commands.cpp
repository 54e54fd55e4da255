// The cost commands: the cost model from the command line. Each command lives in its own file
// (cli/*_command.cpp, the two catalog commands together) over what they share
// (cli/cost_command_support.h); this file puts them in the command tree.
//
//   jobctl simulate ...            simulate_command.cpp   (no daemon)
//   jobctl report breakeven ...    breakeven_command.cpp  (no daemon)
//   jobctl report spend ...        spend_command.cpp      (asks jobctld)
//   jobctl report plan ...         plan_command.cpp       (asks jobctld)
//   jobctl quote SPEC              quote_command.cpp      (asks jobctld)
//   jobctl gpus                    gpus_command.cpp
//   jobctl catalog update | ls     catalog_commands.cpp
//   jobctl fairshare               fair_share_command.cpp (asks jobctld)
//
// Bad input: a message naming the flag on stderr and exit status 2; an unreadable file or an
// unreachable jobctld: exit status 1.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/cost_command_support.h"

namespace jobctl::cli {

void add_cost_commands(CLI::App& app, CliContext& ctx) {
  add_simulate_command(app, ctx);
  auto* report = app.add_subcommand("report", "Cost reports");
  report->require_subcommand(1);
  add_breakeven_command(*report, ctx);
  add_spend_command(*report, ctx);
  add_plan_command(*report, ctx);
  add_quote_command(app, ctx);
  add_gpus_command(app, ctx);
  add_fair_share_command(app, ctx);
  add_catalog_commands(app, ctx);
  add_estimate_commands(app, ctx);
}

}  // namespace jobctl::cli
