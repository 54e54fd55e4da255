// The CPU priority of the calling thread, for background work that must yield to the threads
// serving requests: a placement pass over a backlog of 100,000 jobs may take both cores for
// seconds, and a submit or a health check arriving meanwhile should not wait behind it.
//
// Linux schedules threads, not processes: setpriority(PRIO_PROCESS, tid) sets one thread's nice
// value. Raising it needs no privilege; lowering it back would, so it is one way.
//
// Thread safety: affects only the calling thread.
#pragma once

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/expected.h"

namespace jobctl {

// Gives the calling thread at least the nice value `niceness` (0..19; higher yields more); a
// thread already nicer is left as it is. Errors: the system's.
inline Status lower_current_thread_priority(int niceness) {
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);
  if (errno == 0 && now >= niceness) return {};
  if (setpriority(PRIO_PROCESS, tid, niceness) != 0)
    return make_error(ErrorCode::io, std::string("setpriority: ") + std::strerror(errno));
  return {};
}

}  // namespace jobctl
