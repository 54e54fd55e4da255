// jobctl: the command line. Builds the CLI11 app and its context, adds every command group,
// parses. Global options (--server, -o) may come before or after the command. Errors and exit
// codes follow cli/cli_error.h (docs/cli.md).
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/cli_error.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  using namespace jobctl::cli;
  CLI::App app{"jobctl: submit and watch training jobs, price GPUs, report spend"};
  app.require_subcommand(1);
  app.fallthrough();  // `jobctl ls -o json` as well as `jobctl -o json ls`
  CliContext ctx;
  const SavedLogin login = saved_login();  // jobctl login: a server and its token
  ctx.saved_server = login.server;
  ctx.saved_token = login.token;
  ctx.server = login.server.empty() ? "http://127.0.0.1:8080" : login.server;
  if (const char* env = std::getenv("JOBCTL_SERVER"); env != nullptr && *env != '\0') ctx.server = env;
  if (const char* env = std::getenv("JOBCTL_TOKEN"); env != nullptr && *env != '\0') ctx.token = env;
  ctx.output = "table";
  ctx.out = &std::cout;
  ctx.err = &std::cerr;
  app.add_option("--server", ctx.server,
                 "jobctld URL (default $JOBCTL_SERVER, else the server of `jobctl login`, else http://127.0.0.1:8080)");
  app.add_option("-o,--output", ctx.output, "output format: table (default), json, or csv where offered")
      ->check(CLI::IsMember({"table", "json", "csv"}));

  app.add_option("--token", ctx.token,
                 "API token (default $JOBCTL_TOKEN, else the one `jobctl login` saved, sent only to the server it was saved for)");
  add_job_commands(app, ctx);
  add_launch_command(app, ctx);
  add_auth_commands(app, ctx);
  add_cost_commands(app, ctx);
  add_webhook_commands(app, ctx);
  add_registry_commands(app, ctx);

  // `jobctl submit [SPEC] -- PROGRAM ARGS...`: what follows `--` is the job's command, taken
  // verbatim (its own flags are not jobctl's).
  std::vector<char*> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    if (std::string_view(args[i]) == "--") {
      ctx.after_dashes.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      args.resize(i);
      break;
    }
  }
  int status = 0;
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    status = report_parse_error(app, e, std::vector<std::string>(args.begin() + 1, args.end()), std::cout, std::cerr);
    if (e.get_name() != "RuntimeError") return status;  // no command ran
  }
  if (!ctx.after_dashes.empty() && app.got_subcommand("submit") == false) {
    print_error(std::cerr, "only `jobctl submit` takes a command after --");
    return kBadInput;
  }
  if (!app.got_subcommand("login")) warn_if_token_unneeded(ctx);  // login says so itself
  return status;
}
