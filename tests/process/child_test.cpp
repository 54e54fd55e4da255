// process::Child with real child processes: exit codes, signals, process groups, the child's
// environment, folder and descriptors, and what a failed start reports.
#include "process/child.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "process/line_reader.h"
#include "tests/process/live_process.h"
#include "tests/support/temp_dir.h"

namespace jobctl::process {
namespace {

using namespace std::chrono_literals;

using testing::gone_soon;

// The first line a child prints on stdout.
std::string first_line(Child& c) { return LineReader(c.stdout_fd()).next(10s).value_or("<none>"); }

TEST(Child, CapturesStdoutStderrAndTheExitCode) {
  auto c = Child::spawn({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(c) << c.error().message;
  std::string out, err;
  ExitStatus st = (*c)->read_all(out, err);
  EXPECT_EQ(out, "out\n");
  EXPECT_EQ(err, "err\n");
  EXPECT_TRUE(st.exited);
  EXPECT_EQ(st.code, 3);
  EXPECT_EQ(st.shell_code(), 3);
  EXPECT_FALSE(st.success());
  EXPECT_EQ(st.describe(), "exit code 3");
}

TEST(Child, RunsInTheGivenFolderWithStdinFromDevNull) {
  auto c = Child::spawn({"/bin/sh", "-c", "pwd; cat; echo done"}, {.cwd = "/"});
  ASSERT_TRUE(c);
  std::string out, err;
  EXPECT_TRUE((*c)->read_all(out, err).success());
  EXPECT_EQ(out, "/\ndone\n");  // cat read EOF from /dev/null at once
}

TEST(Child, AMissingProgramIsNotFound) {
  auto c = Child::spawn({"/nonexistent/jobctl-train", "--spec", "x"});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::not_found);
  EXPECT_NE(c.error().message.find("/nonexistent/jobctl-train"), std::string::npos) << c.error().message;

  auto by_name = Child::spawn({"jobctl-no-such-program-anywhere"});
  ASSERT_FALSE(by_name);
  EXPECT_EQ(by_name.error().code, ErrorCode::not_found);

  jobctl::testing::TempDir tmp;
  const std::string script = tmp.file("not-executable.sh");
  std::ofstream(script) << "#!/bin/sh\necho hi\n";
  ::chmod(script.c_str(), 0644);
  auto not_executable = Child::spawn({script});
  ASSERT_FALSE(not_executable);
  EXPECT_EQ(not_executable.error().code, ErrorCode::not_found);

  auto no_folder = Child::spawn({"/bin/true"}, {.cwd = tmp.file("no-such-folder")});
  ASSERT_FALSE(no_folder);
  EXPECT_EQ(no_folder.error().code, ErrorCode::not_found);
  EXPECT_NE(no_folder.error().message.find("no-such-folder"), std::string::npos) << no_folder.error().message;

  auto nothing = Child::spawn({});
  ASSERT_FALSE(nothing);
  EXPECT_EQ(nothing.error().code, ErrorCode::invalid_argument);
}

TEST(Child, SignalsReachTheChildEvenIfTheParentBlocksOrIgnoresThem) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, &old);  // the child must not inherit this mask
  struct sigaction ignore {}, old_int {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);  // nor this disposition (ignored ones survive exec)
  auto c = Child::spawn({"/bin/sh", "-c", "echo ready; exec sleep 30"});
  auto d = Child::spawn({"/bin/sh", "-c", "echo ready; exec sleep 30"});
  sigaction(SIGINT, &old_int, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(c);
  ASSERT_TRUE(d);
  ASSERT_EQ(first_line(**c), "ready");
  ASSERT_EQ(first_line(**d), "ready");
  EXPECT_FALSE((*c)->try_wait());
  EXPECT_TRUE((*c)->signal(SIGTERM));
  ExitStatus st = (*c)->wait();
  EXPECT_FALSE(st.exited);
  EXPECT_EQ(st.signal, SIGTERM);
  EXPECT_EQ(st.shell_code(), 128 + SIGTERM);
  EXPECT_NE(st.describe().find("signal 15"), std::string::npos);
  EXPECT_FALSE((*c)->signal(SIGTERM));  // reaped: nothing to signal
  EXPECT_FALSE((*c)->signal_group(SIGTERM));

  EXPECT_TRUE((*d)->signal(SIGINT));
  EXPECT_EQ((*d)->wait().signal, SIGINT);
}

TEST(Child, RunsInItsOwnProcessGroupWhichSignalGroupReachesWhole) {
  // The shell starts a grandchild in the background and waits; a signal to the group ends both.
  auto c = Child::spawn({"/bin/sh", "-c", "sleep 30 & echo $!; wait"});
  ASSERT_TRUE(c);
  const pid_t grandchild = std::atoi(first_line(**c).c_str());
  ASSERT_GT(grandchild, 0);
  EXPECT_EQ(::getpgid((*c)->pid()), (*c)->pid());
  EXPECT_EQ(::getpgid(grandchild), (*c)->pid());
  EXPECT_NE(::getpgid((*c)->pid()), ::getpgrp());
  EXPECT_TRUE((*c)->signal_group(SIGTERM));
  EXPECT_FALSE((*c)->wait().exited);
  EXPECT_TRUE(gone_soon(grandchild));
}

TEST(Child, DestroyingARunningChildKillsItsGroup) {
  pid_t pid = 0, grandchild = 0;
  {
    auto c = Child::spawn({"/bin/sh", "-c", "sleep 30 & echo $!; wait"});
    ASSERT_TRUE(c);
    pid = (*c)->pid();
    grandchild = std::atoi(first_line(**c).c_str());
    ASSERT_GT(grandchild, 0);
  }
  EXPECT_NE(::kill(pid, 0), 0);  // gone and reaped
  EXPECT_TRUE(gone_soon(grandchild));
}

TEST(Child, WaitForAndTerminateEscalateToSigkill) {
  // A child that ignores SIGTERM (its own choice, after the exec) ends only by SIGKILL.
  auto stubborn = Child::spawn({"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"});
  ASSERT_TRUE(stubborn);
  ASSERT_EQ(first_line(**stubborn), "ready");
  EXPECT_FALSE((*stubborn)->wait_for(50ms));
  ExitStatus st = (*stubborn)->terminate(SIGTERM, 200ms);
  EXPECT_FALSE(st.exited);
  EXPECT_EQ(st.signal, SIGKILL);

  // One that takes SIGTERM ends by it, within the grace.
  auto polite = Child::spawn({"/bin/sh", "-c", "echo ready; exec sleep 30"});
  ASSERT_TRUE(polite);
  ASSERT_EQ(first_line(**polite), "ready");
  EXPECT_EQ((*polite)->terminate(SIGTERM, 30s).signal, SIGTERM);
  EXPECT_EQ((*polite)->kill().signal, SIGTERM);  // already ended: the same status

  auto quick = Child::spawn({"/bin/sh", "-c", "exit 4"});
  ASSERT_TRUE(quick);
  auto done = (*quick)->wait_for(30s);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->code, 4);
}

TEST(Child, GetsThisEnvironmentWithTheOverrides) {
  ::setenv("JOBCTL_PROCESS_TEST_KEPT", "kept", 1);
  ::setenv("JOBCTL_PROCESS_TEST_REPLACED", "old", 1);
  auto c = Child::spawn(
      {"/bin/sh", "-c", "echo \"$JOBCTL_PROCESS_TEST_KEPT/$JOBCTL_PROCESS_TEST_REPLACED/$CUDA_VISIBLE_DEVICES\""},
      {.env = {"JOBCTL_PROCESS_TEST_REPLACED=new", "CUDA_VISIBLE_DEVICES=3"}});
  ::unsetenv("JOBCTL_PROCESS_TEST_KEPT");
  ::unsetenv("JOBCTL_PROCESS_TEST_REPLACED");
  ASSERT_TRUE(c);
  std::string out, err;
  ASSERT_TRUE((*c)->read_all(out, err).success()) << err;
  EXPECT_EQ(out, "kept/new/3\n");
}

TEST(Child, ABareNameRemovesAVariableAndAnAddressSpaceLimitHolds) {
  ::setenv("JOBCTL_PROCESS_TEST_SECRET", "s3cret", 1);
  auto c = Child::spawn({"/bin/sh", "-c", "echo \"${JOBCTL_PROCESS_TEST_SECRET:-gone}\"; ulimit -v"},
                        {.env = {"JOBCTL_PROCESS_TEST_SECRET"}, .address_space_limit_bytes = uint64_t{256} << 20});
  ::unsetenv("JOBCTL_PROCESS_TEST_SECRET");
  ASSERT_TRUE(c);
  std::string out, err;
  ASSERT_TRUE((*c)->read_all(out, err).success()) << err;
  EXPECT_EQ(out, "gone\n262144\n") << "ulimit -v is in KiB";
}

TEST(Child, InheritsNoDescriptorButStdio) {
  // A descriptor another part of this process opened without O_CLOEXEC.
  const int leaky = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaky, 3);
  const std::string fd = std::to_string(leaky);
  auto c = Child::spawn({"/bin/sh", "-c", "if [ -e /proc/self/fd/" + fd + " ]; then echo open; else echo closed; fi"});
  ::close(leaky);
  ASSERT_TRUE(c);
  std::string out, err;
  ASSERT_TRUE((*c)->read_all(out, err).success()) << err;
  EXPECT_EQ(out, "closed\n");
}

TEST(Child, SendsOutputToAFileToNowhereOrToThisProcess) {
  jobctl::testing::TempDir tmp;
  const std::string log = tmp.file("child.log");
  std::ofstream(log) << "before\n";
  auto c = Child::spawn({"/bin/sh", "-c", "echo out; echo err >&2"},
                        {.stdout_to = Output::append_to(log), .stderr_to = Output::append_to(log)});
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)->stdout_fd(), -1);
  EXPECT_EQ((*c)->stderr_fd(), -1);
  EXPECT_TRUE((*c)->wait().success());
  std::stringstream text;
  text << std::ifstream(log).rdbuf();
  EXPECT_EQ(text.str(), "before\nout\nerr\n");  // appended, in order, neither overwriting the other

  auto quiet = Child::spawn({"/bin/sh", "-c", "echo out; echo err >&2; exit 5"},
                            {.stdout_to = Output::discard(), .stderr_to = Output::pipe()});
  ASSERT_TRUE(quiet);
  EXPECT_EQ((*quiet)->stdout_fd(), -1);
  std::string out, err;
  EXPECT_EQ((*quiet)->read_all(out, err).code, 5);
  EXPECT_EQ(out, "");
  EXPECT_EQ(err, "err\n");

  auto no_file = Child::spawn({"/bin/true"}, {.stdout_to = Output::append_to(tmp.file("no/such/dir/x.log"))});
  ASSERT_FALSE(no_file);
  EXPECT_EQ(no_file.error().code, ErrorCode::io);
}

#ifdef __linux__
TEST(Child, IsSentSigtermWhenTheThreadThatStartedItEnds) {
  std::unique_ptr<Child> orphan;
  std::thread starter([&] {
    auto c = Child::spawn({"/bin/sh", "-c", "exec sleep 30"});
    if (c) orphan = std::move(*c);
  });
  starter.join();
  ASSERT_TRUE(orphan);
  auto st = orphan->wait_for(30s);
  ASSERT_TRUE(st) << "the child outlived the thread that started it";
  EXPECT_EQ(st->signal, SIGTERM);
}
#endif

}  // namespace
}  // namespace jobctl::process
