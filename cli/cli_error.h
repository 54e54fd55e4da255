// How every jobctl command reports trouble, one convention for the whole CLI (docs/cli.md):
//
//   jobctl: error: MESSAGE      on standard error (a message may go on over indented lines)
//   jobctl: warning: MESSAGE    on standard error; the command goes on
//
// and the exit status: 0 done; 1 (kIoError) it failed where it was not the command line's fault
// (jobctld refused or could not be reached, a file could not be read or written, a job waited on
// did not succeed); 2 (kBadInput) the command line or a file it names is wrong (an unknown
// command or flag, a bad value, an output the command does not offer), the same on every try.
//
// A command fails by printing through fail() and throwing CLI::RuntimeError(code); main.cpp hands
// CLI11's own parse errors to report_parse_error(), which words them the same way and adds a
// suggestion for a mistyped command or flag.
//
// Thread safety: functions over the caller's context and streams; no state of their own.
#pragma once

#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "cli/commands.h"

namespace CLI {
class App;
class ParseError;
}  // namespace CLI

namespace jobctl::cli {

inline constexpr int kIoError = 1;
inline constexpr int kBadInput = 2;

// "jobctl: error: MESSAGE\n" (control characters escaped: a message may quote a server's answer).
void print_error(std::ostream& err, std::string_view message);
// "jobctl: warning: MESSAGE\n".
void print_warning(std::ostream& err, std::string_view message);

// Prints the error and leaves the command with exit status `code`.
[[noreturn]] void fail(CliContext& ctx, const std::string& message, int code = kBadInput);
// An error from jobctld or the client (its field named): kBadInput for input found wrong
// (invalid_argument, malformed_json, usage), kIoError for anything else; "cannot reach jobctld at
// SERVER" with a hint when it is unavailable.
[[noreturn]] void fail(CliContext& ctx, const Error& e);

// Fails (kBadInput) unless ctx.output is one of `allowed`, naming the ones the command offers.
void check_output(CliContext& ctx, std::initializer_list<std::string_view> allowed);

// What a mistyped word on the command line was likely meant to be: for the first word that is
// neither a command, a flag nor a value of `app`'s tree (args: the command line without the
// program name and without what follows `--`), a sentence naming it and the closest command or
// flag ("unknown command 'sumbit'; did you mean 'submit'?"). Empty when every word is known.
std::string mistyped_word(const CLI::App& app, const std::vector<std::string>& args);

// The exit status for a parse error, after printing it: help and version to `out` (status 0); a
// command's own failure (already printed) as it is; any other parse error as "jobctl: error:",
// with mistyped_word()'s suggestion where it finds one, and kBadInput.
int report_parse_error(const CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& args,
                       std::ostream& out, std::ostream& err);

}  // namespace jobctl::cli
