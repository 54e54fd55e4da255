// The dashboard in headless Chromium (label browser): tests/web/dashboard_browser.mjs, run with
// Node and playwright-core, drives Debian's /usr/bin/chromium through the pages (see that script
// for the checks). Screenshots (laptop and phone sizes) are saved under
// <build>/tests/web/artifacts/.
//
//   SubmitWatchDetailChartsAndScreenshots  a real jobctld (port 0, a temporary data folder, the web
//       root it finds next to its binary) and a real jobctl-worker (--device cpu): the whole
//       dashboard. A second jobctld runs with --auth and a user token from `jobctld --create-token`,
//       for the token entry.
//   EveryPageInARealisticState  jobctld with its provisioner on jobctl-cloudsim (cloud instances
//       run the real worker), an owned worker with a faked V100 that runs command jobs: jobs that
//       finished, failed, moved from a cloud instance to the owned GPU, command jobs and one still
//       running; a screenshot of every page, and checks that each reads as a product (human
//       headers and units, no raw API names, placement and cost in the list, worker kinds).
//       The Slurm worker is a registration as a worker in a Slurm batch job makes it (provider
//       "slurm"), made over the API with no Slurm behind it: a real batch job needs tests/e2e's
//       fake Slurm tools and a job of its own.
//   FirstRunOfStartScript  the service as a user first sees it: scripts/start.sh --no-build (the
//       simulated cloud, jobctld with its configuration, a local worker, the first Fashion-MNIST
//       job), then that job's page with its loss chart drawn from the API's data.
//
// Skips, saying why, only when Chromium, Node or web/node_modules (playwright-core) are missing
// (`scripts/setup.sh --browser` installs them); under CI=true that is a failure.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "tests/support/browser_tools.h"
#include "tests/support/ci.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using jobctl::testing::Process;
using namespace std::chrono_literals;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

using jobctl::testing::BrowserTools;

fs::path artifacts_dir(const jobctl::testing::TempDir& tmp) {
  return env("JOBCTL_WEB_ARTIFACTS").empty() ? fs::path(tmp.file("artifacts")) : fs::path(env("JOBCTL_WEB_ARTIFACTS"));
}

// The build copied Chart.js (Debian's libjs-chart.js) next to the dashboard.
void expect_chart_js_beside(const std::string& jobctld) {
  EXPECT_TRUE(fs::exists(fs::path(jobctld).parent_path() / "web" / "vendor" / "chart.min.js"))
      << "the build did not copy Chart.js next to jobctld (web/dashboard.cmake): install libjs-chart.js "
         "(scripts/setup.sh) and rebuild";
}

TEST(DashboardBrowser, SubmitWatchDetailChartsAndScreenshots) {
  const BrowserTools tools;
  if (const auto why = tools.missing(); !why.empty()) JOBCTL_SKIP_UNLESS_CI(why);

  const std::string jobctld = env("JOBCTLD"), worker_bin = env("JOBCTL_WORKER"), train = env("JOBCTL_TRAIN");
  ASSERT_FALSE(jobctld.empty() || worker_bin.empty() || train.empty()) << "JOBCTLD, JOBCTL_WORKER, JOBCTL_TRAIN are set by ctest";
  expect_chart_js_beside(jobctld);

  jobctl::testing::TempDir tmp;
  Process daemon({jobctld, "--listen", "127.0.0.1:0", "--data-dir", tmp.file("data"), "--heartbeat-interval-s", "1"});
  ASSERT_TRUE(daemon.ok());
  const auto started = jobctl::testing::listening_line(daemon, 60s);
  ASSERT_FALSE(started.is_null()) << "jobctld did not start\n" << daemon.output();
  const std::string url = started["url"];

  Process worker({worker_bin, "--server", url, "--name", "browser-worker", "--trainer", train,
                  "--work-dir", tmp.file("work"), "--device", "cpu", "--wait-s", "5"});
  ASSERT_TRUE(worker.ok());

  // A second daemon with auth on, and a user token made the documented way (docs/security.md).
  std::string token;
  {
    const auto mk = jobctl::testing::run_to_end(
        {jobctld, "--create-token", "browser", "--role", "user", "--data-dir", tmp.file("auth-data")}, 60s);
    ASSERT_TRUE(mk.success()) << mk.describe();
    const std::string& mk_out = mk.out;
    token = mk_out.substr(0, mk_out.find_first_of("\r\n"));
    ASSERT_EQ(token.rfind("jct_", 0), 0u) << mk_out;
  }
  Process auth_daemon({jobctld, "--listen", "127.0.0.1:0", "--data-dir", tmp.file("auth-data"), "--auth"});
  ASSERT_TRUE(auth_daemon.ok());
  const auto auth_started = jobctl::testing::listening_line(auth_daemon, 60s);
  ASSERT_FALSE(auth_started.is_null()) << auth_daemon.output();
  const std::string auth_url = auth_started["url"];

  const auto script =
      tools.run_script("tests/web/dashboard_browser.mjs", {"--url", url, "--artifacts", artifacts_dir(tmp).string(), "--auth-url", auth_url, "--token", token});
  EXPECT_TRUE(script.success()) << script.describe() << "\n" << script.err << "\n--- worker:\n" << worker.output()
                            << "\n--- daemon:\n" << daemon.output();

  auto wst = worker.stop(SIGTERM, 30s);
  EXPECT_TRUE(wst && wst->success()) << worker.output();
  auto dst = daemon.stop(SIGTERM, 30s);
  EXPECT_TRUE(dst && dst->success()) << daemon.output();
  auto ast = auth_daemon.stop(SIGTERM, 30s);
  EXPECT_TRUE(ast && ast->success()) << auth_daemon.output();
}

TEST(DashboardBrowser, EveryPageInARealisticState) {
  const BrowserTools tools;
  if (const auto why = tools.missing(); !why.empty()) JOBCTL_SKIP_UNLESS_CI(why);
  const std::string jobctld = env("JOBCTLD"), worker_bin = env("JOBCTL_WORKER"), train = env("JOBCTL_TRAIN"),
                    cloudsim_bin = env("JOBCTL_CLOUDSIM");
  ASSERT_FALSE(jobctld.empty() || worker_bin.empty() || train.empty() || cloudsim_bin.empty())
      << "JOBCTLD, JOBCTL_WORKER, JOBCTL_TRAIN, JOBCTL_CLOUDSIM are set by ctest";
  jobctl::testing::TempDir tmp;

  // The simulated cloud at F = 60; its instances run the real worker on the CPU.
  const auto quote = [](const std::string& s) { return "'" + s + "'"; };
  Process cloudsim({cloudsim_bin, "--listen", "127.0.0.1:0", "--state-dir", tmp.file("cloudsim"), "--time-factor", "60",
                    "--notice-seconds", "600", "--worker-command",
                    quote(worker_bin) + " --trainer " + quote(train) + " --device cpu --threads 1 --wait-s 2 --notice-interval-ms 200"});
  ASSERT_TRUE(cloudsim.ok());
  const auto sim_started = jobctl::testing::listening_line(cloudsim, 30s);
  ASSERT_FALSE(sim_started.is_null()) << cloudsim.output();
  // The provisioner on it; one owned V100 priced for the cost model; moves re-evaluated every
  // second and priced as this machine does them, so a move of seconds pays off.
  const nlohmann::json config = {
      {"cloud", {{"provider", "sim"}, {"tag", "dash"}, {"poll_s", 1}, {"idle_timeout_s", 3},
                 {"sim", {{"url", sim_started["url"]}}}}},
      {"cost", {{"local_gpus", {{{"gpu_model", "V100"}, {"count", 1}, {"purchase_usd", 2000}}}}}},
      {"placement", {{"clouds", {"aws"}}, {"reevaluate_s", 1}, {"provision_hours", 0}, {"warmup_hours", 0},
                     {"checkpoint_fixed_seconds", 0}}}};
  const std::string config_path = tmp.file("jobctld.json");
  std::ofstream(config_path) << config.dump() << "\n";
  Process daemon({jobctld, "--listen", "127.0.0.1:0", "--data-dir", tmp.file("data"), "--heartbeat-interval-s", "1",
                  "--config", config_path});
  ASSERT_TRUE(daemon.ok());
  const auto started = jobctl::testing::listening_line(daemon, 60s);
  ASSERT_FALSE(started.is_null()) << "jobctld did not start\n" << daemon.output();
  const std::string url = started["url"];
  Process owned({worker_bin, "--server", url, "--name", "owned-v100", "--trainer", train, "--work-dir", tmp.file("owned"),
                 "--fake-gpus", (tools.source / "tests/fixtures/nvidia-smi/v100-sxm2-16gb").string(), "--threads", "1",
                 "--wait-s", "2", "--allow-commands"});
  ASSERT_TRUE(owned.ok());

  const auto script = tools.run_script("tests/web/dashboard_browser.mjs",
                                       {"--url", url, "--artifacts", artifacts_dir(tmp).string(), "--realistic", "1"});
  EXPECT_TRUE(script.success()) << script.describe() << "\n" << script.err << "\n--- owned worker:\n" << owned.output()
                                << "\n--- daemon:\n" << daemon.output() << "\n--- cloudsim:\n" << cloudsim.output();
  auto wst = owned.stop(SIGTERM, 30s);
  EXPECT_TRUE(wst && wst->success()) << owned.output();
  auto dst = daemon.stop(SIGTERM, 30s);
  EXPECT_TRUE(dst && dst->success()) << daemon.output();
  (void)cloudsim.stop(SIGTERM, 30s);
}

// The README's first run: scripts/start.sh starts the simulated cloud, jobctld with its
// configuration file and a local worker exactly as a user's first `scripts/start.sh` does (only
// the setup and the build are left out: ctest built the programs), and submits the first
// Fashion-MNIST job. The dashboard serves that job's page with the loss chart drawn from the
// API's progress (screenshot first-run-job-detail.png). scripts/stop.sh stops it all.
TEST(DashboardBrowser, FirstRunOfStartScript) {
  const BrowserTools tools;
  if (const auto why = tools.missing(); !why.empty()) JOBCTL_SKIP_UNLESS_CI(why);
  const std::string jobctld = env("JOBCTLD");
  ASSERT_FALSE(jobctld.empty() || env("JOBCTL_CLOUDSIM").empty() || env("JOBCTL_CLI").empty())
      << "JOBCTLD, JOBCTL_CLOUDSIM, JOBCTL_CLI are set by ctest";
  expect_chart_js_beside(jobctld);

  jobctl::testing::TempDir tmp;
  const fs::path scripts = tools.source / "scripts";
  // The programs come from the environment ctest set (JOBCTLD, JOBCTL_WORKER, JOBCTL_TRAIN,
  // JOBCTL_CLI, JOBCTL_CLOUDSIM); state under the temporary folder; a free port.
  const std::vector<std::string> service_env = {"JOBCTL_HOME=" + tmp.file("home"), "JOBCTL_PORT=0", "JOBCTL_DEVICE=cpu"};
  struct StopService {
    fs::path scripts;
    std::vector<std::string> env;
    ~StopService() { (void)jobctl::process::run({(scripts / "stop.sh").string()}, {.env = env, .timeout = 60s}); }
  } stop_service{scripts, service_env};

  auto start = jobctl::process::run({(scripts / "start.sh").string(), "--no-build"},
                                    {.cwd = tools.source.string(), .env = service_env, .timeout = 120s});
  ASSERT_TRUE(start) << start.error().message;
  const std::string& out = start->out;
  std::cout << out;
  ASSERT_TRUE(start->success()) << start->describe() << "\n" << out << start->err;
  std::smatch job, url;
  ASSERT_TRUE(std::regex_search(out, job, std::regex("submitted job ([0-9]+)"))) << out;
  ASSERT_TRUE(std::regex_search(out, url, std::regex("(http://127\\.0\\.0\\.1:[0-9]+)/ +the dashboard"))) << out;

  const auto script =
      tools.run_script("tests/web/dashboard_browser.mjs", {"--url", url[1].str(), "--artifacts", artifacts_dir(tmp).string(), "--first-run-job", job[1].str()});
  EXPECT_TRUE(script.success()) << script.describe() << "\n" << script.err << "\n--- start.sh:\n" << out;
}

}  // namespace
