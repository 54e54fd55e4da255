#include "worker/child_process.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace jobctl::worker {
namespace {

TEST(ChildProcess, CapturesStdoutStderrAndTheExitCode) {
  auto c = ChildProcess::spawn({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(c) << c.error().message;
  std::string out, err;
  ExitStatus st = (*c)->read_all(out, err);
  EXPECT_EQ(out, "out\n");
  EXPECT_EQ(err, "err\n");
  EXPECT_TRUE(st.exited);
  EXPECT_EQ(st.code, 3);
  EXPECT_FALSE(st.success());
  EXPECT_EQ(st.describe(), "exit code 3");
}

TEST(ChildProcess, RunsInTheGivenFolderWithStdinClosed) {
  auto c = ChildProcess::spawn({"/bin/sh", "-c", "pwd; cat; echo done"}, "/");
  ASSERT_TRUE(c);
  std::string out, err;
  EXPECT_TRUE((*c)->read_all(out, err).success());
  EXPECT_EQ(out, "/\ndone\n");  // cat read EOF from /dev/null at once
}

TEST(ChildProcess, AMissingProgramIsNotFound) {
  auto c = ChildProcess::spawn({"/nonexistent/jobctl-train", "--spec", "x"});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::not_found);
  EXPECT_NE(c.error().message.find("/nonexistent/jobctl-train"), std::string::npos);
}

TEST(ChildProcess, SignalsReachTheChildEvenIfTheParentBlocksThem) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, &old);  // the child must not inherit this mask
  auto c = ChildProcess::spawn({"/bin/sh", "-c", "echo ready; exec sleep 30"});
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(c);
  char buf[16];
  ASSERT_GT(::read((*c)->stdout_fd(), buf, sizeof buf), 0);
  EXPECT_FALSE((*c)->try_wait());
  EXPECT_TRUE((*c)->send_signal(SIGTERM));
  ExitStatus st = (*c)->wait();
  EXPECT_FALSE(st.exited);
  EXPECT_EQ(st.signal, SIGTERM);
  EXPECT_NE(st.describe().find("signal 15"), std::string::npos);
  EXPECT_FALSE((*c)->send_signal(SIGTERM));  // reaped: nothing to signal
}

TEST(ChildProcess, DestroyingARunningChildKillsIt) {
  pid_t pid = 0;
  {
    auto c = ChildProcess::spawn({"/bin/sh", "-c", "exec sleep 30"});
    ASSERT_TRUE(c);
    pid = (*c)->pid();
  }
  EXPECT_NE(::kill(pid, 0), 0);  // gone and reaped
}

TEST(LineSplitter, JoinsChunksAndCapsLongLines) {
  LineSplitter s(8);
  auto a = s.feed("ab");
  EXPECT_TRUE(a.empty());
  auto b = s.feed("c\r\nde\nf");
  EXPECT_EQ(b, (std::vector<std::string>{"abc", "de"}));
  auto c = s.feed("0123456789ABCDEF\nok\n");
  EXPECT_EQ(c, (std::vector<std::string>{"f0123456", "ok"}));
  s.feed("tail");
  EXPECT_EQ(s.finish(), "tail");
  EXPECT_FALSE(s.finish());
}

}  // namespace
}  // namespace jobctl::worker
