// What the cost commands (simulate, report, quote, gpus, catalog) share: how they fail, read and
// write files, check -o, print tables and CSV, and ask jobctld. One file per command uses these
// (cli/*_command.cpp); add_cost_commands (cli/cost_commands.cpp) registers them all.
//
// Failure: fail() (cli/cli_error.h): kBadInput for a bad flag or file content, kIoError for an
// unreadable file or jobctld.
//
// Thread safety: functions over the caller's context; no state of their own.
#pragma once

#include <initializer_list>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/expected.h"
#include "cli/cli_error.h"
#include "cli/commands.h"

namespace CLI {
class App;
}

namespace jobctl::cli {

// `r`'s value, or fail with its message (and field) and kIoError.
template <class T>
T must_ok(CliContext& ctx, Expected<T> r) {
  if (!r) fail(ctx, r.error().message + (r.error().field.empty() ? "" : " (" + r.error().field + ")"), kIoError);
  return std::move(*r);
}

// The whole file; `what` names it in the message ("trace", "catalog").
std::string read_file(CliContext& ctx, const std::string& path, const std::string& what);
void write_file(CliContext& ctx, const std::string& path, const std::string& text);

std::string opt_fixed(const std::optional<double>& v, int decimals, const std::string& none = "-");
// Aligned columns for people (cli/table.h, as every jobctl table).
void print_table(std::ostream& out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows);
void print_csv(std::ostream& out, const std::vector<std::string>& header,
               const std::vector<std::vector<std::string>>& rows);

// Sends one request to jobctld (ctx.server, with the bearer token) and returns its JSON answer;
// an unreachable server or an error answer fails with kIoError.
nlohmann::json daemon_call(CliContext& ctx, std::string_view method, const std::string& path,
                           std::string_view body = {});

// The flag a cost/ or scheduler/ error's field stands for (`flags`: field -> flag); the field
// itself when it has none.
std::string flag_for(const std::map<std::string, std::string>& flags, const std::string& field);

// A date flag as milliseconds since the epoch: "YYYY-MM-DD" (UTC midnight) or the milliseconds
// themselves; "" stays "". Anything else fails naming `flag`.
std::string date_arg_ms(CliContext& ctx, const std::string& flag, const std::string& text);

// Each command's registration (its own file). `report` is the `jobctl report` group.
void add_simulate_command(CLI::App& app, CliContext& ctx);
void add_breakeven_command(CLI::App& report, CliContext& ctx);
void add_spend_command(CLI::App& report, CliContext& ctx);
void add_plan_command(CLI::App& report, CliContext& ctx);
void add_quote_command(CLI::App& app, CliContext& ctx);
void add_gpus_command(CLI::App& app, CliContext& ctx);
void add_catalog_commands(CLI::App& app, CliContext& ctx);
void add_fair_share_command(CLI::App& app, CliContext& ctx);

}  // namespace jobctl::cli
