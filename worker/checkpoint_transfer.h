// Moves checkpoints between a worker and jobctld (docs/api.md, "Checkpoints"): uploads each
// file the trainer writes, with its CRC32C, retrying transport failures and 5xx answers with
// exponential backoff and jitter (base/retry.h) in a wait its owner can interrupt; lists a job's stored checkpoints; downloads one and keeps it only if its
// bytes match the checksum the daemon recorded (so a corrupt stored blob is detected here and
// the caller falls back to an older one).
//
// Binary bodies (application/octet-stream) are why this is not client::ApiClient, whose requests
// are JSON.
//
// Ownership and thread safety: owns one curl easy handle; not thread-safe (one per job runner,
// one per checkpoint uploader).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/expected.h"
#include "base/retry.h"
#include "protocol/worker_messages.h"

namespace jobctl::worker {

struct TransferOptions {
  std::string server;            // http://host:port
  std::string bearer_token;      // sent as Authorization: Bearer when not empty
  std::string worker_secret;     // sent as X-Worker-Secret (the worker's own, from registering)
  // Per upload/download; transport failures and 5xx answers only: 5 attempts, pauses from
  // 0.25 s doubling up to 8 s.
  RetryPolicy retry{.max_attempts = 5,
                    .first_delay = std::chrono::milliseconds(250),
                    .max_delay = std::chrono::seconds(8)};
  long timeout_ms = 120000;      // per request
};

// A stored checkpoint as a lease and the checkpoint list name it.
using StoredCheckpoint = protocol::ResumePoint;

class CheckpointTransfer {
 public:
  // `wait` spends the pauses between attempts; when it is interrupted the transfer gives up
  // with the last attempt's error.
  explicit CheckpointTransfer(TransferOptions options, RetryWait wait = sleep_wait);
  ~CheckpointTransfer();
  CheckpointTransfer(const CheckpointTransfer&) = delete;
  CheckpointTransfer& operator=(const CheckpointTransfer&) = delete;

  // Uploads the file open as `fd` (read from its start; the caller keeps and closes it) as the
  // job's checkpoint at `step` under the lease (worker, epoch). Errors keep the daemon's code
  // ("stale_epoch" when fenced off: do not retry) or "unavailable"/"io" after the last attempt.
  Status upload(int64_t job_id, int64_t step, int64_t worker_id, int64_t epoch, int fd);
  // The same for a file of the worker's own, by path (the tests' uploads).
  Status upload(int64_t job_id, int64_t step, int64_t worker_id, int64_t epoch, const std::string& path);
  // The job's stored checkpoints, newest first.
  Expected<std::vector<StoredCheckpoint>> list(int64_t job_id);
  // Downloads one into `dest` (written as dest.tmp, fsynced, renamed). Code corrupt_checkpoint when the
  // bytes do not match `expected.crc32c` or its size (nothing is left at `dest` then).
  Status download(int64_t job_id, const StoredCheckpoint& expected, const std::string& dest);
  // A command job's code bundle (GET /v1/bundles/{sha256}); its own header checksum is checked
  // when it is unpacked (bundle/code_bundle.h).
  Expected<std::string> download_bundle(const std::string& sha256);

 private:
  struct Answer {
    long status = 0;
    std::string body;
  };
  Expected<Answer> send(const std::string& method, const std::string& path, const std::string* body);
  // send() with retries on transport failures and 5xx.
  Expected<Answer> send_retrying(const std::string& method, const std::string& path, const std::string* body);

  TransferOptions options_;
  RetryWait wait_;
  void* curl_ = nullptr;  // CURL*
};

// CRC32C of a whole file.
Expected<uint32_t> file_crc32c(const std::string& path, int64_t* size = nullptr);
// Reads a whole file.
Expected<std::string> read_file(const std::string& path);
// Reads the whole file open as `fd`, from its start (pread: the descriptor's offset is left).
Expected<std::string> read_descriptor(int fd, const std::string& shown);

}  // namespace jobctl::worker
