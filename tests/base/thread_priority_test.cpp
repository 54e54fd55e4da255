#include "base/thread_priority.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

namespace jobctl {
namespace {

int nice_of(pid_t tid) {
  errno = 0;
  return getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
}

// The nice value is the calling thread's alone: the thread that lowered itself runs at 10, the
// others keep theirs.
TEST(ThreadPriority, LowersOnlyTheCallingThread) {
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  const int before = nice_of(self);
  int lowered = -100;
  Status st;
  std::thread background([&] {
    st = lower_current_thread_priority(10);
    lowered = nice_of(static_cast<pid_t>(syscall(SYS_gettid)));
  });
  background.join();
  ASSERT_TRUE(st) << st.error().message;
  EXPECT_EQ(lowered, std::max(before, 10));
  EXPECT_EQ(nice_of(self), before);
}

}  // namespace
}  // namespace jobctl
