// `jobctl registry login HOST -u USER [--password-stdin]`, `jobctl registry logout HOST`,
// `jobctl registry list`: the caller's container registry logins, which jobctld keeps sealed and
// hands to the worker that pulls a private image of theirs (docs/security.md, "Registry
// credentials"), through /v1/registry-credentials.
#include <termios.h>
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/utc_time.h"
#include "cli/cli_error.h"
#include "cli/commands.h"
#include "cli/cost_command_support.h"
#include "train/spec/image_reference.h"

namespace jobctl::cli {

using nlohmann::json;

namespace {

// The password: one line of ctx.in. At a terminal (standard input, not --password-stdin) it is
// asked for on ctx.err and typed without echo.
std::string read_password(CliContext& ctx, bool from_stdin) {
  const bool prompt = !from_stdin && ctx.in == &std::cin && ::isatty(STDIN_FILENO) == 1;
  termios saved{};
  const bool hidden = prompt && ::tcgetattr(STDIN_FILENO, &saved) == 0;
  if (prompt) *ctx.err << "Password: " << std::flush;
  if (hidden) {
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
  }
  std::string password;
  std::getline(*ctx.in, password);
  if (hidden) {
    ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    *ctx.err << "\n";
  }
  while (!password.empty() && (password.back() == '\n' || password.back() == '\r')) password.pop_back();
  return password;
}

std::string registry_path(CliContext& ctx, const std::string& host) {
  auto registry = train::parse_registry_host(host, "HOST");
  if (!registry) fail(ctx, registry.error());
  return "/v1/registry-credentials/" + *registry;
}

}  // namespace

void add_registry_commands(CLI::App& app, CliContext& ctx) {
  auto* group = app.add_subcommand(
      "registry", "container registry logins: jobctld hands yours to the worker that pulls your job's image");
  group->require_subcommand(1);

  struct LoginOpts {
    std::string host, username;
    bool password_stdin = false;
  };
  auto o = std::make_shared<LoginOpts>();
  auto* login = group->add_subcommand("login", "store your login to a registry (the password from standard input)");
  login->add_option("HOST", o->host, "the registry: host[:port], as your images name it (registry.example.com)")->required();
  login->add_option("-u,--username", o->username, "your user name at the registry")->required();
  login->add_flag("--password-stdin", o->password_stdin,
                  "read the password (or token) from standard input, one line; without it a terminal asks for it");
  login->callback([&ctx, o] {
    check_output(ctx, {"table", "json"});
    const std::string path = registry_path(ctx, o->host);
    const std::string password = read_password(ctx, o->password_stdin);
    if (password.empty()) fail(ctx, "no password given (one line on standard input)");
    json r = daemon_call(ctx, "PUT", path, json{{"username", o->username}, {"password", password}}.dump());
    if (ctx.output == "json") {
      *ctx.out << r.dump(2) << "\n";
      return;
    }
    *ctx.out << "stored your login to " << r.value("registry", o->host) << " as " << r.value("username", o->username)
             << "\n";
  });

  auto host = std::make_shared<std::string>();
  auto* logout = group->add_subcommand("logout", "forget your login to a registry");
  logout->add_option("HOST", *host, "the registry: host[:port]")->required();
  logout->callback([&ctx, host] {
    check_output(ctx, {"table", "json"});
    json r = daemon_call(ctx, "DELETE", registry_path(ctx, *host));
    if (ctx.output == "json") {
      *ctx.out << r.dump(2) << "\n";
      return;
    }
    *ctx.out << "forgot your login to " << r.value("deleted", *host) << "\n";
  });

  auto* list = group->add_subcommand("list", "the registries you stored a login to, and the user names (never a password)");
  list->callback([&ctx] {
    check_output(ctx, {"table", "json", "csv"});
    json r = daemon_call(ctx, "GET", "/v1/registry-credentials");
    if (ctx.output == "json") {
      *ctx.out << r.dump(2) << "\n";
      return;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : r.value("registry_credentials", json::array()))
      rows.push_back({c.value("registry", ""), c.value("username", ""),
                      format_utc(c.value("updated_ms", int64_t{0}), UtcStyle::rfc3339)});
    const std::vector<std::string> header{"REGISTRY", "USERNAME", "STORED"};
    if (ctx.output == "csv")
      print_csv(*ctx.out, header, rows);
    else if (rows.empty())
      *ctx.out << "no registry logins\n";
    else
      print_table(*ctx.out, header, rows);
  });
}

}  // namespace jobctl::cli
