// The `jobctl` command tree is assembled from groups of subcommands, one file per group, so that
// each concept's commands live beside nothing else. main.cpp creates the CLI11 app and the
// context, calls every add_*_commands, and parses.
//
// A command reports failure by throwing CLI::RuntimeError(exit_code) after printing its message
// to ctx.err; CLI11 turns that into the process exit code.
//
// Ownership: the context outlives the app; commands hold references to it.
#pragma once

#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace jobctl::cli {

struct CliContext {
  std::string server;   // from --server, else $JOBCTL_SERVER, else http://127.0.0.1:8080
  std::string output;   // -o: "table" (default), "json", "csv" where a command offers it
  std::ostream* out;    // standard output (tests pass a stringstream)
  std::ostream* err;    // standard error
};

// submit, ls, show, cancel, logs, workers (talk to jobctld)
void add_job_commands(CLI::App& app, CliContext& ctx);
// simulate, report, quote, catalog (the cost model; simulate and report breakeven need no daemon)
void add_cost_commands(CLI::App& app, CliContext& ctx);

}  // namespace jobctl::cli
