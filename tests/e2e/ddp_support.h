// What the e2e tests of PyTorch programs share: whether Debian's python3-torch is here, and for
// gangs examples/pytorch/train_ddp.py as a job (torch.distributed over gloo on the CPU) and the
// weights hash of the same program run as N processes outside jobctl
// (examples/pytorch/run_ddp_local.py), the reference a gang's result must equal.
//
// Thread safety: free functions; each call runs its own processes.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "process/run.h"
#include "tests/e2e/recovery_support.h"

namespace jobctl::e2e {

// Debian's interpreter, which python3-torch installs into (not a python3 earlier on PATH).
inline constexpr const char* kDebianPython = "/usr/bin/python3";

inline std::string source_path(const std::string& relative) {
  return env_or_fail("JOBCTL_SOURCE_DIR") + "/" + relative;
}

inline bool torch_available() {
  auto r = process::run({kDebianPython, "-c", "import torch"}, {.timeout = std::chrono::seconds(60)});
  return r && r->success();
}

inline bool torch_distributed_available() {
  auto r = process::run({kDebianPython, "-c", "import torch.distributed as d; assert d.is_gloo_available()"},
                        {.timeout = std::chrono::seconds(60)});
  return r && r->success();
}

// The job's command: train_ddp.py with `args`.
inline std::vector<std::string> ddp_command(const std::vector<std::string>& args) {
  std::vector<std::string> command = {kDebianPython, source_path("examples/pytorch/train_ddp.py")};
  command.insert(command.end(), args.begin(), args.end());
  return command;
}

// train_ddp.py with `args` run as `nproc` processes outside jobctl (run_ddp_local.py), to its end.
inline process::RunResult run_ddp_reference(const std::vector<std::string>& args, int nproc = 2) {
  std::vector<std::string> argv = {kDebianPython, source_path("examples/pytorch/run_ddp_local.py"), "--nproc",
                                   std::to_string(nproc), "--"};
  argv.insert(argv.end(), args.begin(), args.end());
  return jobctl::testing::run_to_end(argv, std::chrono::minutes(5));
}

// The last weights hash a run printed (empty: none), checking the run succeeded.
inline std::string ddp_weights_hash(const process::RunResult& r) {
  EXPECT_TRUE(r.success()) << r.out << r.err;
  std::string last;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("weights_sha256")) last = j["weights_sha256"];
  }
  EXPECT_EQ(last.size(), 64u) << r.out;
  return last;
}

// The final weights hash of train_ddp.py with `args` run as `nproc` processes outside jobctl.
inline std::string ddp_reference_hash(const std::vector<std::string>& args, int nproc = 2) {
  return ddp_weights_hash(run_ddp_reference(args, nproc));
}

}  // namespace jobctl::e2e
