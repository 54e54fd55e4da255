// The CLI's one error convention (cli/cli_error.h): the prefix, the exit codes, and suggestions
// for mistyped commands and flags, over the real command tree (nothing here reaches a server).
#include "cli/cli_error.h"

#include <gtest/gtest.h>

#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace jobctl::cli {
namespace {

struct Parsed {
  int code = 0;
  std::string out, err;
};

// The app as main.cpp builds it: global options, every command group, the same error report.
class CliErrors : public ::testing::Test {
 protected:
  CliErrors() : ctx_{"http://127.0.0.1:1", "", "table", &cmd_out_, &cmd_err_} {
    app_.require_subcommand(1);
    app_.fallthrough();
    app_.add_option("--server", ctx_.server);
    app_.add_option("-o,--output", ctx_.output)->check(CLI::IsMember({"table", "json", "csv"}));
    app_.add_option("--token", ctx_.token);
    add_job_commands(app_, ctx_);
    add_auth_commands(app_, ctx_);
    add_cost_commands(app_, ctx_);
  }

  Parsed parse(std::vector<std::string> args) {
    std::vector<const char*> argv{"jobctl"};
    for (const auto& a : args) argv.push_back(a.c_str());
    Parsed p;
    std::ostringstream out, err;
    try {
      app_.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      p.code = report_parse_error(app_, e, args, out, err);
    }
    p.out = out.str();
    p.err = err.str() + cmd_err_.str();
    return p;
  }

  std::ostringstream cmd_out_, cmd_err_;
  CliContext ctx_;
  CLI::App app_{"jobctl"};
};

TEST_F(CliErrors, AMistypedCommandGetsASuggestion) {
  Parsed p = parse({"sumbit", "--epochs", "1"});
  EXPECT_EQ(p.code, kBadInput);
  EXPECT_EQ(p.err, "jobctl: error: unknown command 'sumbit'; did you mean 'submit'?\n");
}

TEST_F(CliErrors, AMistypedCommandInAGroupIsNamedWithTheGroup) {
  Parsed p = parse({"report", "spnd"});
  EXPECT_EQ(p.code, kBadInput);
  EXPECT_NE(p.err.find("unknown command 'spnd' for `jobctl report`; did you mean 'spend'?"), std::string::npos) << p.err;
}

TEST_F(CliErrors, AMistypedFlagGetsASuggestion) {
  Parsed p = parse({"submit", "--epoch", "3"});
  EXPECT_EQ(p.code, kBadInput);
  EXPECT_EQ(p.err, "jobctl: error: unknown option '--epoch' for `jobctl submit`; did you mean '--epochs'?\n");
  // A global option's value is skipped, and a global option is known to every command.
  Parsed g = parse({"--server", "http://127.0.0.1:1", "ls", "--stat", "queued"});
  EXPECT_NE(g.err.find("unknown option '--stat' for `jobctl ls`; did you mean '--state'?"), std::string::npos) << g.err;
}

TEST_F(CliErrors, AWordFarFromEveryCommandPointsAtTheHelp) {
  Parsed p = parse({"frobnicate"});
  EXPECT_EQ(p.code, kBadInput);
  EXPECT_EQ(p.err, "jobctl: error: unknown command 'frobnicate'; `jobctl --help` lists the commands\n");
}

TEST(CliMistypedWord, KnownWordsAndValuesAreNotTypos) {
  CLI::App app{"jobctl"};
  std::ostringstream out, err;
  CliContext ctx{"http://127.0.0.1:1", "", "table", &out, &err};
  app.add_option("-o,--output", ctx.output);
  add_job_commands(app, ctx);
  EXPECT_EQ(mistyped_word(app, {"show", "12", "-o", "json"}), "");
  EXPECT_EQ(mistyped_word(app, {"-o", "json", "ls", "--state=queued"}), "");
  EXPECT_EQ(mistyped_word(app, {"move", "3", "--to", "spot"}), "");
  EXPECT_EQ(mistyped_word(app, {"cancel", "-1"}), "") << "a negative number is a value";
}

// CLI11's own errors (a missing value, a value a check refuses) take the same prefix and status.
TEST_F(CliErrors, ParseErrorsTakeThePrefixAndStatusTwo) {
  Parsed missing = parse({"show"});
  EXPECT_EQ(missing.code, kBadInput);
  EXPECT_EQ(missing.err.rfind("jobctl: error: ", 0), 0u) << missing.err;
  EXPECT_NE(missing.err.find("ID"), std::string::npos) << missing.err;
  Parsed bad_output = parse({"ls", "-o", "yaml"});
  EXPECT_EQ(bad_output.code, kBadInput);
  EXPECT_EQ(bad_output.err.rfind("jobctl: error: ", 0), 0u) << bad_output.err;
  Parsed none = parse({});
  EXPECT_EQ(none.code, kBadInput);
  EXPECT_EQ(none.err.rfind("jobctl: error: ", 0), 0u) << none.err;
}

TEST_F(CliErrors, HelpIsNotAnError) {
  Parsed p = parse({"submit", "--help"});
  EXPECT_EQ(p.code, 0);
  EXPECT_NE(p.out.find("--epochs"), std::string::npos);
  EXPECT_EQ(p.err, "");
}

// Every group's failures read the same: a cost command, an estimate, a job command.
TEST_F(CliErrors, CommandsFailWithTheSamePrefix) {
  Parsed sim = parse({"simulate", "--trace", "/nonexistent/trace.json", "--policy", "up", "--compute-hours", "1",
                      "--deadline-hours", "2", "--spot-price", "1", "--on-demand-price", "3"});
  EXPECT_EQ(sim.code, kIoError) << sim.err;
  EXPECT_EQ(sim.err.rfind("jobctl: error: ", 0), 0u) << sim.err;
  cmd_err_.str("");
  Parsed unreachable = parse({"ls"});
  EXPECT_EQ(unreachable.code, kIoError);
  EXPECT_EQ(unreachable.err.rfind("jobctl: error: cannot reach jobctld at http://127.0.0.1:1", 0), 0u) << unreachable.err;
  cmd_err_.str("");
  Parsed not_id = parse({"cancel", "abc"});
  EXPECT_EQ(not_id.code, kBadInput);
  EXPECT_EQ(not_id.err.rfind("jobctl: error: a job ID is a positive integer", 0), 0u) << not_id.err;
}

// -o csv where a command prints a table; elsewhere an error naming what it prints.
TEST_F(CliErrors, CsvOnlyWhereATableIsOffered) {
  Parsed show = parse({"show", "1", "-o", "csv"});
  EXPECT_EQ(show.code, kBadInput);
  EXPECT_EQ(show.err, "jobctl: error: -o csv: unsupported output for this command; it prints table, json\n");
  cmd_err_.str("");
  Parsed cancel = parse({"cancel", "1", "-o", "csv"});
  EXPECT_EQ(cancel.code, kBadInput);
  EXPECT_NE(cancel.err.find("-o csv"), std::string::npos) << cancel.err;
}

}  // namespace
}  // namespace jobctl::cli
