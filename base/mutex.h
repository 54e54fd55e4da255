// A mutex the compiler can reason about: Clang's thread-safety analysis (-Wthread-safety) checks
// that every member marked JOBCTL_GUARDED_BY(mu_) is touched only with mu_ held, and that a
// function marked JOBCTL_REQUIRES(mu_) is called only with it held. libstdc++'s std::mutex carries
// no such annotations, so jobctl's code that guards state uses these thin wrappers instead (the
// LevelDB port::Mutex pattern); GCC ignores the annotations and compiles the same code.
//
//   class Counter {
//    public:
//     void add() JOBCTL_EXCLUDES(mu_) { MutexLock lock(mu_); ++n_; }
//    private:
//     Mutex mu_;
//     int n_ JOBCTL_GUARDED_BY(mu_) = 0;
//   };
//
// Spurious wake-ups happen, as with std::condition_variable: wait in a loop on the condition.
//
// Thread safety: Mutex and CondVar are what they wrap; MutexLock belongs to one scope of one thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define JOBCTL_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define JOBCTL_THREAD_ANNOTATION(x)
#endif

#define JOBCTL_CAPABILITY(name) JOBCTL_THREAD_ANNOTATION(capability(name))
#define JOBCTL_SCOPED_CAPABILITY JOBCTL_THREAD_ANNOTATION(scoped_lockable)
#define JOBCTL_GUARDED_BY(x) JOBCTL_THREAD_ANNOTATION(guarded_by(x))
#define JOBCTL_PT_GUARDED_BY(x) JOBCTL_THREAD_ANNOTATION(pt_guarded_by(x))
#define JOBCTL_REQUIRES(...) JOBCTL_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define JOBCTL_EXCLUDES(...) JOBCTL_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define JOBCTL_ACQUIRE(...) JOBCTL_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define JOBCTL_RELEASE(...) JOBCTL_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define JOBCTL_TRY_ACQUIRE(...) JOBCTL_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define JOBCTL_ASSERT_HELD(x) JOBCTL_THREAD_ANNOTATION(assert_capability(x))
#define JOBCTL_RETURN_CAPABILITY(x) JOBCTL_THREAD_ANNOTATION(lock_returned(x))
#define JOBCTL_NO_THREAD_SAFETY_ANALYSIS JOBCTL_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace jobctl {

class JOBCTL_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() JOBCTL_ACQUIRE() { mu_.lock(); }
  void unlock() JOBCTL_RELEASE() { mu_.unlock(); }
  bool try_lock() JOBCTL_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds it (where it cannot see the lock being taken).
  void assert_held() const JOBCTL_ASSERT_HELD(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for one scope.
class JOBCTL_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) JOBCTL_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() JOBCTL_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// A condition variable over a Mutex the caller holds and names at every wait (so the analysis
// sees which mutex is released and retaken).
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void wait(Mutex& mu) JOBCTL_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // Waits until notified or `deadline`; false when the deadline passed.
  template <class Clock, class Duration>
  bool wait_until(Mutex& mu, const std::chrono::time_point<Clock, Duration>& deadline) JOBCTL_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool notified = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return notified;
  }
  template <class Rep, class Period>
  bool wait_for(Mutex& mu, const std::chrono::duration<Rep, Period>& timeout) JOBCTL_REQUIRES(mu) {
    return wait_until(mu, std::chrono::steady_clock::now() + timeout);
  }
  void signal() { cv_.notify_one(); }
  void signal_all() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace jobctl
