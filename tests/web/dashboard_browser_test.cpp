// The dashboard in headless Chromium (label browser): starts a real jobctld (port 0, a
// temporary data folder, the web root it finds next to its binary) and a real jobctl-worker
// (--device cpu), then runs tests/web/dashboard_browser.mjs with Node and playwright-core, which
// drives Debian's /usr/bin/chromium through the page (see that script for the checks). A second
// jobctld runs with --auth and a user token from `jobctld --create-token`, for the token entry.
// Screenshots (laptop and phone sizes) are saved under <build>/tests/web/artifacts/.
//
// Skips, saying why, only when Chromium, Node or web/node_modules (playwright-core, Chart.js) are
// missing: `scripts/setup.sh --browser` installs them.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

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

TEST(DashboardBrowser, SubmitWatchDetailChartsAndScreenshots) {
  const fs::path source = env("JOBCTL_SOURCE_DIR");
  const std::string chromium = env("JOBCTL_CHROMIUM").empty() ? "/usr/bin/chromium" : env("JOBCTL_CHROMIUM");
  const std::string node = env("JOBCTL_NODE");
  const fs::path modules = source / "web" / "node_modules";
  if (::access(chromium.c_str(), X_OK) != 0)
    GTEST_SKIP() << "Chromium not found at " << chromium << ": run scripts/setup.sh --browser";
  if (node.empty() || ::access(node.c_str(), X_OK) != 0)
    GTEST_SKIP() << "Node.js not found (JOBCTL_NODE='" << node << "'): run scripts/setup.sh --browser and reconfigure";
  if (!fs::exists(modules / "playwright-core" / "package.json") || !fs::exists(modules / "chart.js" / "package.json"))
    GTEST_SKIP() << modules.string() << " lacks playwright-core or chart.js: run scripts/setup.sh --browser (npm ci in web/)";

  const std::string jobctld = env("JOBCTLD"), worker_bin = env("JOBCTL_WORKER"), train = env("JOBCTL_TRAIN");
  ASSERT_FALSE(jobctld.empty() || worker_bin.empty() || train.empty()) << "JOBCTLD, JOBCTL_WORKER, JOBCTL_TRAIN are set by ctest";
  // The build copied the dashboard (and Chart.js) next to jobctld; the daemon finds it there.
  ASSERT_TRUE(fs::exists(fs::path(jobctld).parent_path() / "web" / "vendor" / "chart.umd.min.js"))
      << "the build did not copy Chart.js next to jobctld (web/dashboard.cmake); rebuild after npm ci";

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

  const fs::path artifacts = fs::path(env("JOBCTL_WEB_ARTIFACTS").empty() ? tmp.file("artifacts") : env("JOBCTL_WEB_ARTIFACTS"));
  const auto script = jobctl::testing::run_to_end(
      {node, (source / "tests" / "web" / "dashboard_browser.mjs").string(), "--url", url, "--artifacts",
       artifacts.string(), "--chromium", chromium, "--modules", modules.string(), "--auth-url", auth_url, "--token",
       token},
      std::chrono::minutes(8));
  std::cout << script.out;
  EXPECT_TRUE(script.success()) << script.describe() << "\n" << script.err << "\n--- worker:\n" << worker.output()
                            << "\n--- daemon:\n" << daemon.output();

  auto wst = worker.stop(SIGTERM, 30s);
  EXPECT_TRUE(wst && wst->success()) << worker.output();
  auto dst = daemon.stop(SIGTERM, 30s);
  EXPECT_TRUE(dst && dst->success()) << daemon.output();
  auto ast = auth_daemon.stop(SIGTERM, 30s);
  EXPECT_TRUE(ast && ast->success()) << auth_daemon.output();
}

}  // namespace
