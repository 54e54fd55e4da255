#include "train/kernels/cpu_parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace jobctl::train::cpu {

namespace {

class Pool {
 public:
  ~Pool() { resize(0); }

  void resize(int workers) {
    std::lock_guard run_lock(run_mu_);
    {
      std::lock_guard lock(mu_);
      stop_ = true;
      ++generation_;
      published_.store(generation_, std::memory_order_release);
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
    stop_ = false;
    const uint64_t start = generation_;
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this, start] { work(start); });
  }
  int threads() const { return static_cast<int>(threads_.size()) + 1; }

  void run(size_t n, size_t grain, const std::function<void(size_t, size_t)>& body) {
    const size_t chunks = (n + grain - 1) / grain;
    // A parallel_for inside a chunk runs its chunks right there (the pool is busy with the outer
    // one); the chunks and so the bits are the same either way.
    if (threads_.empty() || chunks <= 1 || in_chunk_) {
      for (size_t c = 0; c < chunks; ++c) body(c * grain, std::min(n, (c + 1) * grain));
      return;
    }
    std::lock_guard run_lock(run_mu_);
    {
      std::lock_guard lock(mu_);
      body_ = &body;
      n_ = n;
      grain_ = grain;
      chunks_ = chunks;
      next_.store(0);
      busy_ = threads_.size();
      ++generation_;
      published_.store(generation_, std::memory_order_release);
    }
    cv_.notify_all();
    drain();
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [this] { return busy_ == 0; });
    body_ = nullptr;
  }

 private:
  void drain() {
    in_chunk_ = true;
    for (size_t c; (c = next_.fetch_add(1)) < chunks_;) (*body_)(c * grain_, std::min(n_, (c + 1) * grain_));
    in_chunk_ = false;
  }
  void work(uint64_t seen) {
    for (;;) {
      // A step issues kernels back to back: look for the next one for a few tens of microseconds
      // before sleeping, which saves a futex wake-up per kernel. The BLAS runs on these same
      // threads, so nothing else of ours wants the core meanwhile.
      const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      while (published_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < spin_until) {
      }
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (stop_) return;
      }
      drain();
      std::lock_guard lock(mu_);
      if (--busy_ == 0) done_cv_.notify_one();
    }
  }

  static thread_local bool in_chunk_;
  std::mutex run_mu_;  // one parallel_for (or resize) at a time
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> threads_;
  uint64_t generation_ = 0;
  std::atomic<uint64_t> published_{0};  // generation_, readable without the lock
  bool stop_ = false;
  const std::function<void(size_t, size_t)>* body_ = nullptr;
  size_t n_ = 0, grain_ = 1, chunks_ = 0;
  std::atomic<size_t> next_{0};
  size_t busy_ = 0;
};

thread_local bool Pool::in_chunk_ = false;

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void parallel_for(size_t n, size_t grain, const std::function<void(size_t, size_t)>& body) {
  if (n == 0) return;
  pool().run(n, std::max<size_t>(grain, 1), body);
}

void set_parallel_threads(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (threads != pool().threads()) pool().resize(threads - 1);
}

int parallel_threads() { return pool().threads(); }

}  // namespace jobctl::train::cpu
