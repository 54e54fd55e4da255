// README.md runs as written. A copy of the repository's README, scripts/ and examples/ (no
// ../shared beside it; the release build's programs linked in at build/release/, where the
// README's `jobctl=build/release/cli/jobctl` looks) is started the way a new user starts it,
// `scripts/start.sh --no-build` (the build is ctest's: the test never builds), which starts the
// simulated cloud, jobctld, the local worker and submits the first job. Then every command of
// README.md's shell blocks after the first block's two set-up commands runs in order, from the
// copy's root, in bash with the block's own variable lines before it (`export JOBCTL_SERVER=...`
// names the port start.sh got, not 8080). Each must exit 0 and print what its comment promises:
// kPromises below holds one check per command, written from its comment; a README command with no
// promise here, or a promise no command matches, fails the test, so the two stay in step.
//
// A reader waits for what a comment presumes ("a running job"): such a promise names the job and
// the state the command is run in, and the test waits for it (each wait is bounded and printed).
// After the last command the README's own command job (job 3) must succeed wherever placement
// sent it.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "process/run.h"
#include "tests/support/ci.h"
#include "tests/support/poll.h"
#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string file_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// One command of a shell block: continuation lines joined, its trailing comment apart.
struct ReadmeCommand {
  std::string command;
  std::string comment;
};

// The shell blocks of a Markdown text after the first, each a list of lines: variable lines
// (NAME=..., export NAME=...) and commands.
std::vector<std::string> shell_lines_after_setup(const std::string& markdown) {
  std::vector<std::string> lines;
  std::istringstream in(markdown);
  bool inside = false, first_block_seen = false;
  std::string pending;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) {
      if (!inside && line == "```sh") {
        inside = true;
      } else if (inside) {
        inside = false;
        first_block_seen = true;
      }
      continue;
    }
    if (!inside || !first_block_seen) continue;
    if (!line.empty() && line.back() == '\\') {
      line.pop_back();
      pending += line;
      continue;
    }
    line = pending + line;
    pending.clear();
    if (line.find_first_not_of(' ') != std::string::npos) lines.push_back(line);
  }
  return lines;
}

ReadmeCommand split_comment(const std::string& line) {
  static const std::regex comment(R"(\s+#\s*(.*)$)");
  std::smatch m;
  if (!std::regex_search(line, m, comment)) return {line, ""};
  return {line.substr(0, static_cast<size_t>(m.position(0))), m[1].str()};
}

bool is_variable_line(const std::string& command) {
  static const std::regex assignment(R"(^(export\s+)?[A-Za-z_][A-Za-z0-9_]*=\S*\s*$)");
  return std::regex_match(command, assignment);
}

// What a command's comment promises, checked on its output (stdout and stderr together) and,
// where the comment names a file, on the copy's files.
struct Promise {
  std::string command_contains;          // picks the command (unique among the README's)
  std::optional<std::pair<int, std::string>> waits_for;  // job and state the comment presumes
  std::function<std::string(const std::string& out, const fs::path& root)> check;  // "" when kept
};

std::string expect_regex(const std::string& out, const std::string& pattern) {
  return std::regex_search(out, std::regex(pattern)) ? "" : "does not match /" + pattern + "/";
}

const std::vector<Promise>& promises() {
  static const std::vector<Promise> kPromises = {
      {"submit examples/fmnist-cnn.json", {},
       [](const std::string& out, const fs::path&) { return expect_regex(out, R"(submitted job 2\b)"); }},
      {"ls --state running", {},
       [](const std::string& out, const fs::path&) { return expect_regex(out, R"(ID\s+NAME\s+STATE|no jobs)"); }},
      {"show 1 --fields state,progress,result", {},
       [](const std::string& out, const fs::path&) -> std::string {
         std::string text = out;
         while (!text.empty() && text.back() == '\n') text.pop_back();
         if (text.find('\n') != std::string::npos) return "is not one line";
         const json j = json::parse(text, nullptr, false);
         if (!j.is_object()) return "is not a JSON object";
         for (const char* key : {"state", "progress", "result"})
           if (!j.contains(key)) return std::string("has no ") + key;
         return j.size() == 3 ? "" : "has more than the three fields";
       }},
      {"logs -f 1", {},
       [](const std::string& out, const fs::path&) -> std::string {
         for (const char* what : {"submitted", "placed", "started", "succeeded"})
           if (out.find(what) == std::string::npos) return std::string("does not show `") + what + "`";
         return "";
       }},
      {"submit --workdir examples/pytorch -- python3 train.py", {},
       [](const std::string& out, const fs::path&) { return expect_regex(out, R"(submitted job 3\b)"); }},
      {"--mode local --env OMP_NUM_THREADS=1", {},
       [](const std::string& out, const fs::path&) { return expect_regex(out, R"(submitted job 4\b)"); }},
      {"cancel 4", {},
       [](const std::string& out, const fs::path&) { return expect_regex(out, R"(^job 4 cancelled\b)"); }},
      {"move 2 --to local", std::make_pair(2, std::string("running")),
       [](const std::string& out, const fs::path&) {
         return expect_regex(out, R"(job 2 will checkpoint and move to local)");
       }},
      {"workers", {},
       [](const std::string& out, const fs::path&) { return expect_regex(out, R"(local-\S+)"); }},
      {"make_sample_trace.py > sample-trace.json", {},
       [](const std::string&, const fs::path& root) -> std::string {
         const json j = json::parse(file_text(root / "sample-trace.json"), nullptr, false);
         if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) return "did not write a trace";
         return j["data"].size() == 1008 ? "" : "wrote " + std::to_string(j["data"].size()) + " ticks, not 7 days of 10 min";
       }},
      {"simulate --trace sample-trace.json", {},
       [](const std::string& out, const fs::path&) -> std::string {
         const json j = json::parse(out, nullptr, false);
         if (j.is_discarded()) return "is not JSON";
         const std::string text = j.dump();
         for (const char* policy : {"\"up\"", "\"optimal\""})
           if (text.find(policy) == std::string::npos) return std::string("has no policy ") + policy;
         return "";
       }},
      {"report breakeven --gpu V100", {},
       [](const std::string& out, const fs::path&) -> std::string {
         const json j = json::parse(out, nullptr, false);
         return j.is_object() ? "" : "is not a JSON object";
       }},
      {"report plan --from", {},
       [](const std::string& out, const fs::path& root) -> std::string {
         if (auto e = expect_regex(out, R"(cheapest: buy none)"); !e.empty()) return e;
         const std::string svg = file_text(root / "plan.svg");
         return svg.find("<svg") != std::string::npos ? "" : "wrote no SVG to plan.svg";
       }},
  };
  return kPromises;
}

// The copy a new user has: the files the README's commands read, and the programs where the
// release build puts them.
fs::path make_copy(const fs::path& source, const fs::path& where) {
  const fs::path root = where / "jobctl";
  fs::create_directories(root);
  fs::copy_file(source / "README.md", root / "README.md");
  for (const char* dir : {"scripts", "examples"})
    fs::copy(source / dir, root / dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const std::pair<const char*, const char*> programs[] = {
      {"JOBCTLD", "daemon/jobctld"},         {"JOBCTL_WORKER", "worker/jobctl-worker"},
      {"JOBCTL_TRAIN", "train/jobctl-train"}, {"JOBCTL_CLI", "cli/jobctl"},
      {"JOBCTL_CLOUDSIM", "cloud/jobctl-cloudsim"}};
  for (const auto& [var, path] : programs) {
    const fs::path at = root / "build" / "release" / path;
    fs::create_directories(at.parent_path());
    fs::create_symlink(fs::absolute(env(var)), at);
  }
  return root;
}

bool torch_available() {
  auto r = jobctl::process::run({"/usr/bin/python3", "-c", "import torch"}, {.timeout = 60s});
  return r && r->success();
}

struct Service {
  fs::path root;
  std::vector<std::string> env;
  ~Service() {
    if (!root.empty()) (void)jobctl::process::run({(root / "scripts" / "stop.sh").string()}, {.env = env, .timeout = 60s});
  }
};

TEST(Readme, EveryCommandRunsAsWrittenAndPrintsWhatItsCommentSays) {
  if (!torch_available()) JOBCTL_SKIP_UNLESS_CI("Debian's python3-torch is not installed (scripts/setup.sh)");
  for (const char* var : {"JOBCTLD", "JOBCTL_WORKER", "JOBCTL_TRAIN", "JOBCTL_CLI", "JOBCTL_CLOUDSIM", "JOBCTL_SOURCE_DIR"})
    ASSERT_FALSE(env(var).empty()) << var << " is set by ctest";
  jobctl::testing::TempDir tmp;
  const fs::path root = make_copy(env("JOBCTL_SOURCE_DIR"), tmp.path());
  ASSERT_FALSE(fs::exists(root / ".." / "shared")) << "the copy must have no ../shared beside it";

  // As on the fresh Debian machine the README is written for: Debian's python3 first on PATH (a
  // pyenv shim may lack python3-torch), no saved jobctl login, start.sh's programs its own build's.
  Service s;
  s.env = {"PATH=/usr/bin:" + env("PATH"), "XDG_CONFIG_HOME=" + tmp.file("config"), "HOME=" + tmp.file("home"),
           "JOBCTL_HOME=" + (root / ".jobctl").string(), "JOBCTL_PORT=0", "JOBCTL_DEVICE=cpu",
           "JOBCTLD", "JOBCTL_WORKER", "JOBCTL_TRAIN", "JOBCTL_CLI", "JOBCTL_CLOUDSIM", "JOBCTL_SERVER", "JOBCTL_TOKEN",
           "JOBCTL_BUILD_DIR", "JOBCTL_NO_FIRST_JOB"};
  fs::create_directories(tmp.file("home"));
  auto start = jobctl::process::run({(root / "scripts" / "start.sh").string(), "--no-build"},
                                    {.cwd = root.string(), .env = s.env, .timeout = 120s});
  ASSERT_TRUE(start) << start.error().message;
  s.root = root;
  ASSERT_TRUE(start->success()) << start->describe() << "\n" << start->out << start->err;
  std::smatch url;
  ASSERT_TRUE(std::regex_search(start->out, url, std::regex(R"re("database":"[^"]*".*"url":"(http://127\.0\.0\.1:[0-9]+)")re")))
      << start->out;
  ASSERT_NE(start->out.find("submitted job 1"), std::string::npos) << start->out;

  const std::string readme = file_text(root / "README.md");
  std::vector<std::string> variables;  // the block's variable lines so far, as bash runs them
  std::vector<bool> promise_used(promises().size(), false);
  int commands = 0;
  auto run_in_bash = [&](const std::string& command, std::chrono::seconds timeout) {
    std::string script = "set -e\n";
    for (const auto& v : variables) script += v + "\n";
    script += command + "\n";
    auto r = jobctl::process::run({"/bin/bash", "-c", script}, {.cwd = root.string(), .env = s.env, .timeout = timeout});
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : jobctl::process::RunResult{};
  };
  auto job_state = [&](int id) {
    auto r = run_in_bash("$jobctl show " + std::to_string(id) + " --fields state", 30s);
    const json j = json::parse(r.out, nullptr, false);
    return j.is_object() ? j.value("state", "") : "";
  };
  for (const std::string& line : shell_lines_after_setup(readme)) {
    ReadmeCommand c = split_comment(line);
    if (is_variable_line(c.command)) {
      // The port start.sh got, where the README says 8080 (tests run side by side).
      variables.push_back(std::regex_replace(c.command, std::regex(R"(http://127\.0\.0\.1:8080)"), url[1].str()));
      continue;
    }
    ++commands;
    size_t which = promises().size();
    for (size_t i = 0; i < promises().size(); ++i)
      if (c.command.find(promises()[i].command_contains) != std::string::npos) {
        EXPECT_EQ(which, promises().size()) << "two promises match `" << c.command << "`";
        which = i;
      }
    if (which == promises().size()) {
      ADD_FAILURE() << "README command with no promise checked here: `" << c.command << "` # " << c.comment;
      continue;
    }
    promise_used[which] = true;
    const Promise& p = promises()[which];
    if (p.waits_for) {
      const auto [job, state] = *p.waits_for;
      const auto t0 = std::chrono::steady_clock::now();
      const bool reached = jobctl::testing::poll_until([&] { return job_state(job) == state; }, 240s, 250ms);
      std::cout << "waited " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
                << " s for job " << job << " to be " << state << "\n";
      ASSERT_TRUE(reached) << "job " << job << " never became " << state << " (" << job_state(job) << ") before `"
                           << c.command << "`\n--- jobctld log:\n" << file_text(root / ".jobctl/logs/jobctld.log");
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run_in_bash(c.command, 300s);
    std::cout << "$ " << c.command << "   (" << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
              << " s)\n" << r.out.substr(0, 600) << (r.out.size() > 600 ? "...\n" : "") << r.err;
    EXPECT_TRUE(r.success()) << "`" << c.command << "`: " << r.describe() << "\n" << r.out << r.err;
    const std::string broken = p.check(r.out + r.err, root);
    EXPECT_EQ(broken, "") << "`" << c.command << "` # " << c.comment << "\nits output " << broken << ":\n" << r.out << r.err;
  }
  EXPECT_EQ(commands, static_cast<int>(promises().size()));
  for (size_t i = 0; i < promises().size(); ++i)
    EXPECT_TRUE(promise_used[i]) << "no README command matches the promise for `" << promises()[i].command_contains << "`";

  // The README's own program (job 3) runs, wherever placement sent it.
  const bool ended = jobctl::testing::poll_until([&] {
    const std::string st = job_state(3);
    return st == "succeeded" || st == "failed" || st == "cancelled";
  }, 240s, 500ms);
  const auto shown = run_in_bash("$jobctl show 3", 30s);
  EXPECT_TRUE(ended && job_state(3) == "succeeded") << shown.out << shown.err << "\n--- worker log:\n"
                                                    << file_text(root / ".jobctl/logs/worker.log");
}

}  // namespace
