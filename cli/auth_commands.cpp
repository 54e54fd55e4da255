// `jobctl login [--token T]`: checks an API token against jobctld (GET /v1/auth/whoami) and saves
// it, with the server, in the user's config file (mode 0600, folder 0700). Later jobctl commands
// without --server talk to that server, and send the token to it only (docs/security.md).
// Without --token the token is read from standard input, so that it does not show in the shell
// history or the process list.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/terminal_text.h"
#include "cli/cli_error.h"
#include "cli/commands.h"
#include "client/api_client.h"

namespace jobctl::cli {

namespace fs = std::filesystem;
using nlohmann::json;

std::string user_config_path() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg == '/')
    return (fs::path(xdg) / "jobctl" / "config.json").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home != nullptr && *home != '\0' ? home : ".") / ".config" / "jobctl" / "config.json").string();
}

namespace {

json read_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return json::object();
  std::stringstream text;
  text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, false);
  return j.is_object() ? j : json::object();
}

// Writes the file readable by its owner only: a temporary file created 0600, then renamed over.
bool write_private(const std::string& path, const std::string& text, std::string& why) {
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path();
  fs::create_directories(dir, ec);
  if (ec) { why = "cannot create " + dir.string() + ": " + ec.message(); return false; }
  ::chmod(dir.c_str(), 0700);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) { why = "cannot write " + tmp; return false; }
  ::fchmod(fd, 0600);  // also when the file already existed with a wider mode
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::fsync(fd) == 0 && ok;
  ok = ::close(fd) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    why = "cannot write " + path;
    return false;
  }
  return true;
}

}  // namespace

SavedLogin saved_login() {
  json j = read_config(user_config_path());
  SavedLogin out;
  if (auto it = j.find("server"); it != j.end() && it->is_string()) out.server = it->get<std::string>();
  if (auto it = j.find("token"); it != j.end() && it->is_string()) out.token = it->get<std::string>();
  if (out.server.empty()) out.token.clear();  // a token saved without its server goes nowhere
  return out;
}

bool same_server(std::string_view a, std::string_view b) {
  auto norm = [](std::string_view u) {
    while (!u.empty() && u.back() == '/') u.remove_suffix(1);
    std::string s(u);
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  return !a.empty() && norm(a) == norm(b);
}

std::string bearer_token(const CliContext& ctx) {
  if (!ctx.token.empty()) return ctx.token;
  return same_server(ctx.server, ctx.saved_server) ? ctx.saved_token : std::string();
}

void warn_if_token_unneeded(CliContext& ctx) {
  const std::string token = bearer_token(ctx);
  if (token.empty()) return;
  client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = token});
  auto who = api.http().request("GET", "/v1/auth/whoami");
  if (!who) return;  // unreachable: the command said so, if it needed the server
  auto body = client::json_from_response(*who);
  if (body && body->is_object() && body->value("auth", true) == false)
    print_warning(*ctx.err, "jobctld at " + ctx.server +
                                " runs with auth off: the token was not checked, and anyone who can reach it "
                                "may do what you did (docs/security.md)");
}

void add_auth_commands(CLI::App& app, CliContext& ctx) {
  auto* login = app.add_subcommand("login", "check an API token with jobctld and save it in your config (~/.config/jobctl/config.json)");
  auto token = std::make_shared<std::string>();
  login->add_option("--token", *token, "the token (default: read from standard input)");
  login->callback([&ctx, token] {
    std::string t = *token;
    if (t.empty()) t = ctx.token;  // the global --token or $JOBCTL_TOKEN
    if (t.empty()) {
      if (::isatty(STDIN_FILENO)) *ctx.err << "API token: " << std::flush;
      std::getline(std::cin, t);
    }
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    if (t.empty()) {
      fail(ctx, "no token given (--token T, or on standard input)");
    }
    client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = t});
    auto who = api.http().request("GET", "/v1/auth/whoami");
    std::string user = "?", role = "?";
    if (!who) {
      fail(ctx, "cannot reach jobctld at " + ctx.server + ": " + who.error().message, kIoError);
    }
    auto body = client::json_from_response(*who);
    if (!body) {
      fail(ctx, "the token was refused: " + body.error().message, kIoError);
    }
    if ((*body)["user"].is_string()) user = (*body)["user"].get<std::string>();
    if ((*body)["role"].is_string()) role = (*body)["role"].get<std::string>();
    const std::string path = user_config_path();
    json cfg = read_config(path);
    cfg["token"] = t;
    cfg["server"] = ctx.server;
    std::string why;
    if (!write_private(path, cfg.dump(2) + "\n", why)) {
      fail(ctx, why, kIoError);
    }
    if ((*body).value("auth", true))
      *ctx.out << "logged in to " << ctx.server << " as " << terminal_text(user, false) << " ("
               << terminal_text(role, false) << "); token saved in " << path << "\n";
    else
      *ctx.out << "jobctld at " << ctx.server << " does not require tokens (auth is off); token saved in " << path << "\n";
  });
}

}  // namespace jobctl::cli
