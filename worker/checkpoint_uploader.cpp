#include "worker/checkpoint_uploader.h"

#include <unistd.h>

#include <chrono>
#include <ostream>
#include <sstream>

namespace jobctl::worker {

CheckpointUploader::CheckpointUploader(TransferOptions options, int64_t job_id, int64_t worker_id,
                                       int64_t epoch, std::ostream& log)
    : transfer_(std::move(options), [this](std::chrono::milliseconds pause) { return !quitting_within(pause); }),
      job_id_(job_id),
      worker_id_(worker_id),
      epoch_(epoch),
      log_(log) {
  thread_ = std::thread([this] { run(); });
}

CheckpointUploader::~CheckpointUploader() {
  {
    MutexLock lock(mu_);
    quit_ = true;
    for (const auto& item : queue_) discard(item);
    queue_.clear();
  }
  cv_.signal_all();
  if (thread_.joinable()) thread_.join();
}

void CheckpointUploader::discard(const Item& item) { ::close(item.fd); }

void CheckpointUploader::enqueue(int64_t step, int fd, std::string reason) {
  {
    MutexLock lock(mu_);
    queue_.push_back(Item{step, fd, std::move(reason)});
  }
  cv_.signal_all();
}

bool CheckpointUploader::quitting_within(std::chrono::milliseconds pause) {
  const auto deadline = std::chrono::steady_clock::now() + pause;
  MutexLock lock(mu_);
  while (!quit_) {
    if (!cv_.wait_until(mu_, deadline)) return quit_;
  }
  return true;
}

bool CheckpointUploader::drain(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  MutexLock lock(mu_);
  while (!queue_.empty() || busy_) {
    if (!cv_.wait_until(mu_, deadline)) return queue_.empty() && !busy_;
  }
  return true;
}

void CheckpointUploader::run() {
  MutexLock lock(mu_);
  for (;;) {
    while (!quit_ && queue_.empty()) cv_.wait(mu_);
    if (quit_) return;
    while (queue_.size() > 1) {  // only the newest matters
      discard(queue_.front());
      queue_.pop_front();
    }
    Item item = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    mu_.unlock();
    std::ostringstream line;
    if (fenced_.load()) {
      line << "jobctl-worker: job " << job_id_ << ": checkpoint at step " << item.step
           << " not uploaded: the lease is gone\n";
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      auto st = transfer_.upload(job_id_, item.step, worker_id_, epoch_, item.fd);
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
      if (st) {
        last_uploaded_.store(item.step);
        line << "jobctl-worker: job " << job_id_ << ": uploaded " << item.reason << " checkpoint at step "
             << item.step << " in " << ms << " ms\n";
      } else if (st.error().code == ErrorCode::stale_epoch || st.error().code == ErrorCode::not_found) {
        fenced_.store(true);
        line << "jobctl-worker: job " << job_id_ << ": checkpoint upload refused (" << st.error().message << ")\n";
      } else {
        line << "jobctl-worker: job " << job_id_ << ": checkpoint at step " << item.step
             << " not uploaded: " << st.error().message << " (the next one will be)\n";
      }
    }
    discard(item);
    log_ << line.str();
    mu_.lock();
    busy_ = false;
    cv_.signal_all();
  }
}

}  // namespace jobctl::worker
