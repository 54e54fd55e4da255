// jobctl quote SPEC [--all] [-o table|json]
// Where a job would run and what it would cost (POST /v1/quote), without submitting it.
#include <CLI/CLI.hpp>

#include <memory>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cost_command_support.h"

namespace jobctl::cli {

namespace {

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

}  // namespace

void add_quote_command(CLI::App& app, CliContext& ctx) {
  struct QuoteArgs { std::string file; bool all = false; };
  auto qa = std::make_shared<QuoteArgs>();
  auto* quote = app.add_subcommand("quote", "Where a job would run and what it would cost, without submitting it");
  quote->add_option("SPEC", qa->file, "job spec file (JSON)")->required();
  quote->add_flag("--all", qa->all, "list every option, rejected ones with their reason (default: the cheapest that fit)");
  quote->add_option("-o,--output", ctx.output, "table (default) or json");
  quote->callback([&ctx, qa] { run_quote(ctx, qa->file, qa->all); });
}

}  // namespace jobctl::cli
