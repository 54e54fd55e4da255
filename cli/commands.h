// The `jobctl` command tree is assembled from groups of subcommands, one file per group, so that
// each concept's commands live beside nothing else. main.cpp creates the CLI11 app and the
// context, calls every add_*_commands, and parses.
//
// A command reports failure with fail() (cli/cli_error.h: one error prefix and exit-code
// convention): it prints the message to ctx.err and throws CLI::RuntimeError(exit_code).
//
// Ownership: the context outlives the app; commands hold references to it.
#pragma once

#include <iosfwd>
#include <iostream>  // std::cin, CliContext::in's default
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace CLI {
class App;
}

namespace jobctl::cli {

struct CliContext {
  std::string server;   // --server, else $JOBCTL_SERVER, else the server of `jobctl login`, else http://127.0.0.1:8080
  std::string token;    // API token given for this run: --token, else $JOBCTL_TOKEN (empty: none)
  std::string output;   // -o: "table" (default), "json", "csv" where a command offers it
  std::ostream* out;    // standard output (tests pass a stringstream)
  std::ostream* err;    // standard error
  // What `jobctl login` saved (the user's config): a token, bound to the server it was checked
  // against. It is sent to that server only (bearer_token).
  std::string saved_server{};
  std::string saved_token{};
  // What followed `--` on the command line: `jobctl submit ... -- python3 train.py` (a command job).
  std::vector<std::string> after_dashes{};
  std::istream* in = &std::cin;  // standard input (a password: `jobctl registry login`)
};

// The token to send to ctx.server: the one given for this run, else the saved one when
// ctx.server is the server it was saved for (never another: a token is a password).
std::string bearer_token(const CliContext& ctx);
// When a token is sent (bearer_token) to a jobctld whose auth is off (GET /v1/auth/whoami says
// so), a warning on ctx.err: the token protects nothing there. Silent when none is sent or the
// server cannot be asked.
void warn_if_token_unneeded(CliContext& ctx);
// Whether two server URLs name the same server (case of scheme and host, trailing '/' ignored).
bool same_server(std::string_view a, std::string_view b);

// login (stores an API token in the user's config; auth_commands.cpp)
void add_auth_commands(CLI::App& app, CliContext& ctx);
// The user's config file: $XDG_CONFIG_HOME/jobctl/config.json, else ~/.config/jobctl/config.json.
std::string user_config_path();
// The server and token saved by `jobctl login` (empty when none).
struct SavedLogin {
  std::string server;
  std::string token;
};
SavedLogin saved_login();
// submit, ls, show, cancel, logs, workers, instances (talk to jobctld)
void add_job_commands(CLI::App& app, CliContext& ctx);
// launch (a task file: launch_command.cpp)
void add_launch_command(CLI::App& app, CliContext& ctx);
// simulate, report, quote, catalog (the cost model; simulate and report breakeven need no daemon)
void add_cost_commands(CLI::App& app, CliContext& ctx);
// webhook add/ls/rm/deliveries (a user's webhooks; webhook_commands.cpp)
void add_webhook_commands(CLI::App& app, CliContext& ctx);
// registry login/logout/list (a user's container registry logins; registry_commands.cpp)
void add_registry_commands(CLI::App& app, CliContext& ctx);
// estimate (a spec's estimate.model: memory per GPU and compute; estimate_commands.cpp, no daemon)
void add_estimate_commands(CLI::App& app, CliContext& ctx);
// The candidate table and reason of a placement (POST /v1/quote, GET /v1/jobs/{id} "placement");
// placement_table.cpp. Used by `jobctl quote` and `jobctl show`. By default the chosen option and the
// cheapest fitting ones (at most kPlacementRows), then the rejected ones counted by reason; `all`:
// every row in the daemon's order, rejected ones with their reason.
inline constexpr size_t kPlacementRows = 10;
void print_placement(std::ostream& out, const nlohmann::json& placement, bool all = false);

}  // namespace jobctl::cli
