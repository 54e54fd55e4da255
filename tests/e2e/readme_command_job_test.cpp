// The README's own command job, run the way a new user runs it: scripts/start.sh (without its
// setup and build: ctest built the programs) starts the simulated cloud, jobctld with its
// configuration and one local worker; then, from the repository's root,
//
//   jobctl submit --workdir examples/pytorch -- python3 train.py --steps 300
//
// must succeed wherever placement sends it. The same command is also submitted held to a cloud
// spot instance (placement.mode cloud, spot always): the instance jobctld launches for it runs
// the user's program; and held to the local worker. Each is given 2 minutes (`jobctl submit --wait` under a timeout); where each
// ran is printed.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "process/run.h"
#include "tests/support/ci.h"
#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Debian's python3 first on PATH, as on the fresh Debian machine the README is written for (a
// python3 earlier on this machine's PATH, a pyenv shim say, may lack Debian's python3-torch).
std::string debian_path() { return "PATH=/usr/bin:" + env("PATH"); }

bool torch_available() {
  auto r = jobctl::process::run({"/usr/bin/python3", "-c", "import torch"}, {.timeout = 60s});
  return r && r->success();
}

struct Service {
  fs::path source;
  std::vector<std::string> env;
  std::string server;
  ~Service() { (void)jobctl::process::run({(source / "scripts" / "stop.sh").string()}, {.env = env, .timeout = 60s}); }
};

// Runs `jobctl --server URL ARGS...` from the repository's root; its output, and whether it exited 0.
jobctl::process::RunResult cli(const Service& s, std::vector<std::string> args, std::chrono::seconds timeout) {
  std::vector<std::string> argv = {env("JOBCTL_CLI"), "--server", s.server};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = jobctl::process::run(argv, {.cwd = s.source.string(), .timeout = timeout});
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? *r : jobctl::process::RunResult{};
}

// The `option` column of `jobctl show`'s chosen row, and the job's state line.
std::string where_it_ran(const Service& s, const std::string& id) {
  const auto show = cli(s, {"show", id}, 60s);
  std::string out;
  std::istringstream lines(show.out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("state:", 0) == 0 || (line.size() > 2 && line.substr(line.size() - 2) == " *")) out += line + "\n";
  return out;
}

TEST(ReadmeCommandJob, RunsAsWrittenWhereverPlacementSendsIt) {
  if (!torch_available()) JOBCTL_SKIP_UNLESS_CI("Debian's python3-torch is not installed (scripts/setup.sh)");
  ASSERT_FALSE(env("JOBCTLD").empty() || env("JOBCTL_CLOUDSIM").empty() || env("JOBCTL_CLI").empty())
      << "JOBCTLD, JOBCTL_CLOUDSIM, JOBCTL_CLI are set by ctest";
  jobctl::testing::TempDir tmp;
  Service s;
  s.source = env("JOBCTL_SOURCE_DIR");
  s.env = {"JOBCTL_HOME=" + tmp.file("home"), "JOBCTL_PORT=0", "JOBCTL_DEVICE=cpu", "JOBCTL_NO_FIRST_JOB=1",
           debian_path()};
  auto start = jobctl::process::run({(s.source / "scripts" / "start.sh").string(), "--no-build"},
                                    {.cwd = s.source.string(), .env = s.env, .timeout = 120s});
  ASSERT_TRUE(start) << start.error().message;
  ASSERT_TRUE(start->success()) << start->describe() << "\n" << start->out << start->err;
  std::smatch url;
  ASSERT_TRUE(std::regex_search(start->out, url, std::regex(R"re("database":"[^"]*".*"url":"(http://127\.0\.0\.1:[0-9]+)")re")))
      << start->out;
  s.server = url[1].str();

  // As the README writes it.
  const auto readme = cli(s, {"submit", "--wait", "--workdir", "examples/pytorch", "--", "python3", "train.py", "--steps", "300"}, 120s);
  std::smatch id;
  ASSERT_TRUE(std::regex_search(readme.out, id, std::regex("submitted job ([0-9]+)"))) << readme.out << readme.err;
  const std::string readme_where = where_it_ran(s, id[1].str());
  std::cout << "the README's job:\n" << readme_where;
  EXPECT_TRUE(readme.success()) << readme.describe() << "\n" << readme.out << readme.err << "\n" << readme_where
                                << "--- jobctld log:\n" << file_text(tmp.file("home/logs/jobctld.log"));
  EXPECT_NE(readme_where.find("succeeded"), std::string::npos) << readme_where;

  // Held to a cloud spot instance: the instance launched for it runs the program.
  const std::string spec = tmp.file("spot.json");
  std::ofstream(spec) << R"({"name": "readme-on-spot", "placement": {"mode": "cloud", "spot": "always"}})";
  const auto spot = cli(s, {"submit", spec, "--wait", "--workdir", "examples/pytorch", "--", "python3", "train.py", "--steps", "300"}, 120s);
  ASSERT_TRUE(std::regex_search(spot.out, id, std::regex("submitted job ([0-9]+)"))) << spot.out << spot.err;
  const std::string spot_where = where_it_ran(s, id[1].str());
  std::cout << "held to spot:\n" << spot_where;
  EXPECT_TRUE(spot.success()) << spot.describe() << "\n" << spot.out << spot.err << "\n" << spot_where;
  EXPECT_NE(spot_where.find("spot "), std::string::npos) << spot_where;
  EXPECT_NE(spot_where.find("succeeded"), std::string::npos) << spot_where;

  // Held to the local worker start.sh started (with --allow-commands).
  const std::string local_spec = tmp.file("local.json");
  std::ofstream(local_spec) << R"({"name": "readme-local", "placement": {"mode": "local"}})";
  const auto local = cli(s, {"submit", local_spec, "--wait", "--workdir", "examples/pytorch", "--", "python3", "train.py", "--steps", "300"}, 120s);
  ASSERT_TRUE(std::regex_search(local.out, id, std::regex("submitted job ([0-9]+)"))) << local.out << local.err;
  const std::string local_where = where_it_ran(s, id[1].str());
  std::cout << "held to the local worker:\n" << local_where;
  EXPECT_TRUE(local.success()) << local.describe() << "\n" << local.out << local.err << "\n" << local_where;
  EXPECT_NE(local_where.find("local "), std::string::npos) << local_where;
  EXPECT_NE(local_where.find("succeeded"), std::string::npos) << local_where;
}

}  // namespace
