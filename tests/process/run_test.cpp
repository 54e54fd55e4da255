// process::run: a command to its end, with a timeout that kills its whole group and output
// captured up to a limit.
#include "process/run.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "tests/process/live_process.h"

namespace jobctl::process {
namespace {

using namespace std::chrono_literals;

TEST(Run, CapturesOutputAndDescribesAFailureByItsLastStderrLine) {
  auto ok = run(shell_argv("printf 'a\\nb\\n'; echo note >&2"));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_TRUE(ok->success());
  EXPECT_EQ(ok->out, "a\nb\n");
  EXPECT_EQ(ok->err, "note\n");

  auto failed = run(shell_argv("echo first >&2; echo oops >&2; exit 3"), {.timeout = 30s});
  ASSERT_TRUE(failed);
  EXPECT_FALSE(failed->success());
  EXPECT_FALSE(failed->timed_out);
  EXPECT_EQ(failed->status.code, 3);
  EXPECT_EQ(failed->describe(), "exit code 3: oops");

  auto killed = run(shell_argv("kill -9 $$"));
  ASSERT_TRUE(killed);
  EXPECT_EQ(killed->describe(), "killed by signal 9 (Killed)");
}

TEST(Run, ATimeoutKillsTheWholeGroupAndKeepsWhatWasRead) {
  // A grandchild in the background holds the pipes open too: run() must not wait for it.
  auto r = run(shell_argv("sleep 30 & echo $!; sleep 30"), {.timeout = 300ms});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->success());
  EXPECT_EQ(r->status.signal, SIGKILL);
  EXPECT_EQ(r->describe(), "timed out");
  const pid_t grandchild = std::atoi(r->out.c_str());
  ASSERT_GT(grandchild, 0) << r->out;
  EXPECT_TRUE(testing::gone_soon(grandchild));
}

TEST(Run, KeepsAtMostMaxOutputAndStillReadsToTheEnd) {
  // 1 MiB on stdout, far more than a pipe holds: the child must not block on it.
  auto r = run(shell_argv("head -c 1048576 /dev/zero; echo done >&2"), {.max_output = 1000});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->success());
  EXPECT_EQ(r->out.size(), 1000u);
  EXPECT_EQ(r->err, "done\n");
}

TEST(Run, TakesAFolderAndEnvironmentAndReportsAMissingProgram) {
  auto r = run(shell_argv("pwd; echo \"$JOBCTL_RUN_TEST\""), {.cwd = "/", .env = {"JOBCTL_RUN_TEST=set"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->out, "/\nset\n");

  auto missing = run({"/nonexistent/aws", "ec2", "describe-instances"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::not_found);
}

}  // namespace
}  // namespace jobctl::process
