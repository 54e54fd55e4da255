#include "cli/cli_error.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <ostream>

#include <CLI/CLI.hpp>

#include "base/edit_distance.h"
#include "base/terminal_text.h"

namespace jobctl::cli {

namespace {

// The closest of `names` to `word`, if it is close enough to be a likely typo: within a third of
// the word's length (at least 2) of edits, or the start of exactly one name.
std::string closest_name(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& name : names) {
    const size_t d = edit_distance(word, name);
    if (d < best_distance) best_distance = d, best = name;
  }
  if (!best.empty()) return best;
  std::vector<std::string> started;
  for (const auto& name : names)
    if (word.size() >= 2 && name.starts_with(word)) started.push_back(name);
  return started.size() == 1 ? started.front() : std::string();
}

// `jobctl report plan`, for messages.
std::string command_path(const CLI::App* app) {
  std::string path;
  for (; app != nullptr && app->get_parent() != nullptr; app = app->get_parent())
    path = app->get_name() + (path.empty() ? "" : " ") + path;
  return "jobctl" + (path.empty() ? "" : " " + path);
}

// The option named by `flag` ("--epochs", "-o") on `app` or an app above it (global options
// fall through to every command).
const CLI::Option* find_flag(const CLI::App* app, const std::string& flag) {
  for (; app != nullptr; app = app->get_parent())
    if (const CLI::Option* o = app->get_option_no_throw(flag)) return o;
  return nullptr;
}

std::vector<std::string> flag_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (; app != nullptr; app = app->get_parent())
    for (const CLI::Option* o : app->get_options()) {
      for (const auto& l : o->get_lnames()) names.push_back("--" + l);
      for (const auto& s : o->get_snames()) names.push_back("-" + s);
    }
  return names;
}

bool has_positionals(const CLI::App* app) {
  for (const CLI::Option* o : app->get_options())
    if (o->get_positional() && !o->nonpositional()) return true;
  return false;
}

bool looks_like_number(const std::string& s) {
  return s.size() > 1 && s[0] == '-' && (std::isdigit(static_cast<unsigned char>(s[1])) || s[1] == '.');
}

}  // namespace

void print_error(std::ostream& err, std::string_view message) {
  err << "jobctl: error: " << terminal_text(message, true) << "\n";
}

void print_warning(std::ostream& err, std::string_view message) {
  err << "jobctl: warning: " << terminal_text(message, true) << "\n";
}

void fail(CliContext& ctx, const std::string& message, int code) {
  print_error(*ctx.err, message);
  throw CLI::RuntimeError(code);
}

void fail(CliContext& ctx, const Error& e) {
  if (e.code == ErrorCode::unavailable)
    fail(ctx, "cannot reach jobctld at " + ctx.server + " (" + e.message +
                  ").\n       Is jobctld running? Point --server or JOBCTL_SERVER at it.", kIoError);
  const bool bad_input = e.code == ErrorCode::invalid_argument || e.code == ErrorCode::malformed_json ||
                         e.code == ErrorCode::usage;
  fail(ctx, e.message + (e.field.empty() ? "" : " (field: " + e.field + ")"), bad_input ? kBadInput : kIoError);
}

void check_output(CliContext& ctx, std::initializer_list<std::string_view> allowed) {
  for (auto a : allowed)
    if (ctx.output == a) return;
  std::string list;
  for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  fail(ctx, "-o " + ctx.output + ": unsupported output for this command; it prints " + list);
}

std::string mistyped_word(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* at = &app;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word.size() > 1 && word[0] == '-' && !looks_like_number(word)) {
      const size_t eq = word.find('=');
      const std::string flag = word.substr(0, eq);
      // Short flags run together ("-fo") are CLI11's to judge.
      if (flag.size() > 2 && flag[1] != '-') continue;
      if (const CLI::Option* o = find_flag(at, flag)) {
        if (eq == std::string::npos && o->get_type_size_min() > 0) ++i;  // its value
        continue;
      }
      const std::string near = closest_name(flag, flag_names(at));
      return "unknown option '" + flag + "' for `" + command_path(at) + "`" +
             (near.empty() ? "; `" + command_path(at) + " --help` lists them" : "; did you mean '" + near + "'?");
    }
    std::vector<std::string> commands;
    for (const CLI::App* sub : at->get_subcommands(std::function<bool(const CLI::App*)>{})) {
      if (sub->get_name() == word) {
        at = sub;
        commands.clear();
        break;
      }
      commands.push_back(sub->get_name());
    }
    if (commands.empty() || has_positionals(at)) continue;  // a command entered, or a value
    const std::string near = closest_name(word, commands);
    return "unknown command '" + word + "'" + (at->get_parent() ? " for `" + command_path(at) + "`" : "") +
           (near.empty() ? "; `" + command_path(at) + " --help` lists the commands" : "; did you mean '" + near + "'?");
  }
  return "";
}

int report_parse_error(const CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& args,
                       std::ostream& out, std::ostream& err) {
  const std::string name = e.get_name();
  if (name == "CallForHelp" || name == "CallForAllHelp" || name == "CallForVersion") return app.exit(e, out, err);
  if (name == "RuntimeError") return e.get_exit_code();  // the command printed its own error
  const std::string typo = mistyped_word(app, args);
  print_error(err, typo.empty() ? std::string(e.what()) : typo);
  if (typo.empty()) err << "       `jobctl --help` or `jobctl COMMAND --help` shows the usage\n";
  return kBadInput;
}

}  // namespace jobctl::cli
