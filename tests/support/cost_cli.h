// `jobctl ARGS` over the cost commands (cli/cost_commands: simulate, quote, report …) against
// `server`, parsed and run as cli/main.cpp runs them, with what they printed and their exit code
// (a parse error's text goes to err, as main.cpp prints it).
#pragma once

#include <CLI/CLI.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace jobctl::testing {

struct CostCliRun {
  int code = 0;
  std::string out;
  std::string err;
};

inline CostCliRun run_cost_cli(const std::string& server, const std::vector<std::string>& args) {
  std::ostringstream out, err;
  cli::CliContext ctx{server, "", "table", &out, &err};
  CLI::App app{"jobctl"};
  app.require_subcommand(1);
  cli::add_cost_commands(app, ctx);
  std::vector<const char*> argv{"jobctl"};
  for (const auto& a : args) argv.push_back(a.c_str());
  CostCliRun r;
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    r.code = e.get_exit_code();
    if (e.get_name() != "RuntimeError") err << e.what();
  }
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace jobctl::testing
