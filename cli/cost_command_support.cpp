#include "cli/cost_command_support.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <ostream>
#include <sstream>

#include "base/fixed_decimal.h"
#include "base/strings.h"
#include "base/terminal_text.h"
#include "cli/table.h"
#include "client/api_client.h"
#include "client/http_client.h"

namespace jobctl::cli {

std::string read_file(CliContext& ctx, const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ctx, "cannot read " + what + " '" + path + "': " + std::strerror(errno), kIoError);
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) fail(ctx, "cannot read " + what + " '" + path + "'", kIoError);
  return s.str();
}

void write_file(CliContext& ctx, const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(ctx, "cannot write '" + path + "': " + std::strerror(errno), kIoError);
  out << text;
  out.close();
  if (!out) fail(ctx, "cannot write '" + path + "'", kIoError);
}

std::string opt_fixed(const std::optional<double>& v, int decimals, const std::string& none) {
  return v ? fixed_decimal(*v, decimals) : none;
}

void print_table(std::ostream& out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows) {
  Table t(header);
  for (const auto& r : rows) t.add_row(r);
  t.print(out);
}

void print_csv(std::ostream& out, const std::vector<std::string>& header,
               const std::vector<std::vector<std::string>>& rows) {
  Table t(header);
  for (const auto& r : rows) t.add_row(r);
  t.print_csv(out);
}

nlohmann::json daemon_call(CliContext& ctx, std::string_view method, const std::string& path,
                           std::string_view body) {
  client::HttpClient http(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
  auto r = http.request(method, path, body);
  if (!r) fail(ctx, "cannot reach jobctld at " + ctx.server + ": " + r.error().message, kIoError);
  return must_ok(ctx, client::json_from_response(*r));
}

std::string flag_for(const std::map<std::string, std::string>& flags, const std::string& field) {
  auto it = flags.find(field);
  return it == flags.end() ? field : it->second;
}

std::string date_arg_ms(CliContext& ctx, const std::string& flag, const std::string& text) {
  if (text.empty()) return "";
  if (text.find('-') == std::string::npos) {
    for (char c : text)
      if (c < '0' || c > '9') fail(ctx, flag + ": expected YYYY-MM-DD or milliseconds since the epoch");
    return text;
  }
  int y = 0, m = 0, d = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%d", &y, &m, &d) != 3 || m < 1 || m > 12 || d < 1 || d > 31)
    fail(ctx, flag + ": expected YYYY-MM-DD or milliseconds since the epoch");
  const auto days = std::chrono::sys_days(std::chrono::year(y) / m / d);
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(days.time_since_epoch()).count());
}

}  // namespace jobctl::cli
