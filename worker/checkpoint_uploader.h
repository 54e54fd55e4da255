// Uploads a job's checkpoints on a thread of its own, so that a slow or unreachable daemon never
// delays the job runner's heartbeats or its reading of the trainer's output. Checkpoints are
// uploaded in order; when several wait, only the newest is sent (an older one is worth nothing
// once a newer one is stored). A refusal with 409/404 (the lease is gone) is remembered:
// fenced() turns true and the runner stops the job. An upload that fails is retried
// (CheckpointTransfer) until the uploader is destroyed, which ends its pauses at once.
//
// Ownership and thread safety: owns its thread and CheckpointTransfer; enqueue(), drain() and the
// accessors may be called from any thread. The destructor drops what is still queued and joins.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <iosfwd>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "worker/checkpoint_transfer.h"

namespace jobctl::worker {

class CheckpointUploader {
 public:
  CheckpointUploader(TransferOptions options, int64_t job_id, int64_t worker_id, int64_t epoch,
                     std::ostream& log);
  ~CheckpointUploader();
  CheckpointUploader(const CheckpointUploader&) = delete;
  CheckpointUploader& operator=(const CheckpointUploader&) = delete;

  // `reason` is the trainer's (periodic, signal, interrupt). `fd`: the checkpoint, open (the
  // handoff opened and checked it: worker/checkpoint_handoff.h); the uploader reads it from that
  // descriptor and closes it once uploaded or skipped. An open descriptor keeps the file's bytes
  // even after the program prunes or replaces it.
  void enqueue(int64_t step, int fd, std::string reason);
  // Waits until everything queued was uploaded (or given up on), at most timeout_ms. True when
  // the queue is empty.
  bool drain(int timeout_ms);

  int64_t last_uploaded_step() const { return last_uploaded_.load(); }
  bool fenced() const { return fenced_.load(); }

 private:
  struct Item {
    int64_t step;
    int fd;
    std::string reason;
  };
  static void discard(const Item& item);
  void run() JOBCTL_EXCLUDES(mu_);
  // The retries' wait: true when the destructor asked the thread to quit within `pause`.
  bool quitting_within(std::chrono::milliseconds pause) JOBCTL_EXCLUDES(mu_);

  CheckpointTransfer transfer_;
  int64_t job_id_, worker_id_, epoch_;
  std::ostream& log_;
  Mutex mu_;
  CondVar cv_;
  std::deque<Item> queue_ JOBCTL_GUARDED_BY(mu_);
  bool busy_ JOBCTL_GUARDED_BY(mu_) = false;  // an item is being uploaded (outside the lock)
  bool quit_ JOBCTL_GUARDED_BY(mu_) = false;
  std::atomic<int64_t> last_uploaded_{-1};
  std::atomic<bool> fenced_{false};
  std::thread thread_;
};

}  // namespace jobctl::worker
