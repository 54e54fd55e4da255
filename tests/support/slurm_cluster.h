// A real one-node Slurm cluster for a test (scripts/slurm-cluster.sh): started in a temporary
// folder when the object is made, stopped (every job cancelled, every daemon gone) when it is
// destroyed. The script's watchdog stops it too if the test process dies without unwinding (a
// ctest timeout kills it).
//
// Needs root and Debian's slurm-wlm (scripts/setup.sh). Where either is missing the cluster is
// not started and skip_reason() says why: tests skip then, and fail when CI=true.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "cloud/command_template.h"
#include "process/run.h"
#include "tests/support/temp_dir.h"

namespace jobctl::testing {

class SlurmCluster {
 public:
  // `args`: more options of `slurm-cluster.sh start` ("--gpus 2").
  explicit SlurmCluster(const std::string& args = "") {
    if (::geteuid() != 0) {
      skip_reason_ = "the Slurm tests run as root (slurmd starts jobs as their users)";
    } else if (::access("/usr/sbin/slurmctld", X_OK) != 0) {
      skip_reason_ = "slurm-wlm is not installed (scripts/setup.sh installs it)";
    }
    if (!skip_reason_.empty()) return;
    const char* src = std::getenv("JOBCTL_SOURCE_DIR");
    script_ = std::string(src ? src : ".") + "/scripts/slurm-cluster.sh";
    dir_ = dir_holder_.file("cluster");
    auto r = shell(cloud::shell_quote(script_) + " start " + cloud::shell_quote(dir_) + " --owner-pid " +
                       std::to_string(::getpid()) + " " + args,
                   std::chrono::seconds(60));
    if (!r || !r->success()) {
      ADD_FAILURE() << "the Slurm cluster did not start: " << (r ? r->out + r->err : r.error().message)
                    << "\n" << logs();
      return;
    }
    started_ = true;
  }
  ~SlurmCluster() { stop(); }
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // Cancels every job and stops the daemons. Idempotent.
  void stop() {
    if (!started_) return;
    started_ = false;
    auto r = shell(cloud::shell_quote(script_) + " stop " + cloud::shell_quote(dir_), std::chrono::seconds(120));
    if (!r || !r->success()) ADD_FAILURE() << "stopping the Slurm cluster failed: " << (r ? r->err : r.error().message);
  }

  bool started() const { return started_; }
  const std::string& skip_reason() const { return skip_reason_; }
  // Where the cluster lives; its slurm.conf (SLURM_CONF for the client commands).
  const std::string& dir() const { return dir_; }
  std::string conf() const { return dir_ + "/slurm.conf"; }
  // The daemons' logs, for failure messages.
  std::string logs() const {
    auto r = shell("tail -n 30 " + cloud::shell_quote(dir_) + "/log/*.log 2>&1", std::chrono::seconds(10));
    return r ? r->out : std::string();
  }
  // The jobcomp/filetxt record: one line per finished (or requeued) job, Slurm's own record.
  std::string job_records() const {
    auto r = shell("cat " + cloud::shell_quote(dir_) + "/log/jobcomp.txt 2>/dev/null", std::chrono::seconds(10));
    return r ? r->out : std::string();
  }

 private:
  static Expected<process::RunResult> shell(const std::string& command, std::chrono::milliseconds timeout) {
    return process::run(process::shell_argv(command), {.timeout = timeout});
  }

  TempDir dir_holder_;
  std::string script_;
  std::string dir_;
  std::string skip_reason_;
  bool started_ = false;
};

// Skips the test when the cluster cannot run here, except under CI=true where that fails.
#define JOBCTL_REQUIRE_SLURM(cluster)                                              \
  do {                                                                             \
    if (!(cluster).skip_reason().empty()) {                                        \
      const char* ci = std::getenv("CI");                                          \
      if (ci != nullptr && std::string(ci) == "true") FAIL() << (cluster).skip_reason(); \
      GTEST_SKIP() << (cluster).skip_reason();                                     \
    }                                                                              \
    ASSERT_TRUE((cluster).started());                                              \
  } while (0)

}  // namespace jobctl::testing
