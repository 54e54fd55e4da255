// Chromium, Node and playwright-core, as scripts/setup.sh --browser installs them, for the tests
// that drive a real browser (tests/web, tests/security): where they are, why they cannot run
// here, and running one of the repository's playwright scripts with them.
//
// Environment: JOBCTL_SOURCE_DIR (the repository), JOBCTL_NODE (set by CMake), JOBCTL_CHROMIUM
// (default /usr/bin/chromium). Thread safety: reads the environment when constructed.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace jobctl::testing {

struct BrowserTools {
  static std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v == nullptr ? std::string() : std::string(v);
  }

  std::filesystem::path source = env("JOBCTL_SOURCE_DIR");
  std::string chromium = env("JOBCTL_CHROMIUM").empty() ? "/usr/bin/chromium" : env("JOBCTL_CHROMIUM");
  std::string node = env("JOBCTL_NODE");
  std::filesystem::path modules = source / "web" / "node_modules";

  // Why they cannot run here, or "".
  std::string missing() const {
    if (::access(chromium.c_str(), X_OK) != 0) return "Chromium not found at " + chromium + ": run scripts/setup.sh --browser";
    if (node.empty() || ::access(node.c_str(), X_OK) != 0)
      return "Node.js not found (JOBCTL_NODE='" + node + "'): run scripts/setup.sh --browser and reconfigure";
    if (!std::filesystem::exists(modules / "playwright-core" / "package.json"))
      return modules.string() + " lacks playwright-core: run scripts/setup.sh --browser (npm ci in web/)";
    return "";
  }

  // Runs the script at `script` (relative to the repository) with --chromium and --modules, then
  // `args`, for at most `timeout`; its output goes to the test log.
  process::RunResult run_script(const std::string& script, const std::vector<std::string>& args,
                                std::chrono::milliseconds timeout = std::chrono::minutes(8)) const {
    std::vector<std::string> argv = {node, (source / script).string(), "--chromium", chromium, "--modules",
                                     modules.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = run_to_end(argv, timeout);
    std::cout << result.out;
    return result;
  }
};

}  // namespace jobctl::testing
