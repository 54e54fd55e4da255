// Reading children's output: LineSplitter (bytes to lines), LineReader (lines from one
// descriptor, with a deadline) and OutputCollector (a child whose output a thread collects).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "process/line_reader.h"
#include "process/line_splitter.h"
#include "process/output_collector.h"

namespace jobctl::process {
namespace {

using namespace std::chrono_literals;

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

TEST(LineReader, ReturnsLinesAsTheyCompleteAndTellsATimeoutFromTheEnd) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  LineReader reader(fds[0]);
  ASSERT_EQ(::write(fds[1], "one\ntw", 6), 6);
  EXPECT_EQ(reader.next(), "one");
  EXPECT_FALSE(reader.next(20ms));  // "tw" is not a line yet
  EXPECT_FALSE(reader.at_end());
  ASSERT_EQ(::write(fds[1], "o\nthree", 7), 7);
  ::close(fds[1]);
  EXPECT_EQ(reader.next(), "two");
  EXPECT_EQ(reader.next(), "three");  // the last line, without '\n', at the end
  EXPECT_FALSE(reader.next());
  EXPECT_TRUE(reader.at_end());
  ::close(fds[0]);
}

TEST(OutputCollector, CollectsBothStreamsLineByLine) {
  auto c = OutputCollector::start({"/bin/sh", "-c", "echo out; echo err >&2; echo ready; exit 2"});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_TRUE((*c)->wait_for_output("ready", 30s));
  EXPECT_EQ((*c)->wait().code, 2);
  const std::string all = (*c)->output();
  EXPECT_NE(all.find("out\n"), std::string::npos) << all;
  EXPECT_NE(all.find("err\n"), std::string::npos) << all;
  const auto lines = (*c)->lines();
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& l : lines) EXPECT_EQ(l.from_stderr, l.text == "err") << l.text;
  auto ready = (*c)->wait_for_line([](std::string_view l) { return l == "ready"; }, 1s);
  ASSERT_TRUE(ready);
  // The output has ended: a line that never came is not waited for.
  EXPECT_FALSE((*c)->wait_for_line([](std::string_view l) { return l == "never"; }, 60s));
}

TEST(OutputCollector, StopsPolitelyOrKills) {
  auto polite = OutputCollector::start({"/bin/sh", "-c", "echo ready; exec sleep 30"});
  ASSERT_TRUE(polite);
  ASSERT_TRUE((*polite)->wait_for_output("ready", 30s));
  auto st = (*polite)->stop(SIGTERM, 30s);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->signal, SIGTERM);

  auto stubborn = OutputCollector::start({"/bin/sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"});
  ASSERT_TRUE(stubborn);
  ASSERT_TRUE((*stubborn)->wait_for_output("ready", 30s));
  EXPECT_FALSE((*stubborn)->stop(SIGTERM, 200ms));  // had to be killed
  EXPECT_EQ((*stubborn)->try_wait()->signal, SIGKILL);
}

}  // namespace
}  // namespace jobctl::process
