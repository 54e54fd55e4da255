// An LD_PRELOAD library that steps a running process's wall clock, as NTP, a VM restore or an
// operator can: CLOCK_REALTIME (and CLOCK_REALTIME_COARSE) read through clock_gettime() is shifted
// by the signed milliseconds stored (8 bytes, host order) in the file JOBCTL_CLOCK_SHIFT_FILE
// names, read at every call through a shared mapping, so a test changes it while the process runs.
// CLOCK_MONOTONIC and the others are left alone: a time namespace (unshare --time) moves only
// those, which is why the tests of a wall-clock step use this instead.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace {

using ClockGettime = int (*)(clockid_t, struct timespec*);

ClockGettime real_clock_gettime() {
  static ClockGettime real = reinterpret_cast<ClockGettime>(dlsym(RTLD_NEXT, "clock_gettime"));
  return real;
}

const volatile int64_t* shift_ms() {
  static const volatile int64_t* shift = [] {
    const char* path = std::getenv("JOBCTL_CLOCK_SHIFT_FILE");
    if (!path) return static_cast<const volatile int64_t*>(nullptr);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return static_cast<const volatile int64_t*>(nullptr);
    void* m = ::mmap(nullptr, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    return m == MAP_FAILED ? static_cast<const volatile int64_t*>(nullptr) : static_cast<const volatile int64_t*>(m);
  }();
  return shift;
}

}  // namespace

extern "C" int clock_gettime(clockid_t clock, struct timespec* ts) {
  const int rc = real_clock_gettime()(clock, ts);
  if (rc != 0 || (clock != CLOCK_REALTIME && clock != CLOCK_REALTIME_COARSE)) return rc;
  if (const volatile int64_t* shift = shift_ms()) {
    const int64_t ns = int64_t{ts->tv_sec} * 1'000'000'000 + ts->tv_nsec + *shift * 1'000'000;
    ts->tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    ts->tv_nsec = static_cast<long>(ns % 1'000'000'000);
  }
  return rc;
}
