// The daemon's side of checkpoints (docs/recovery.md): workers upload every checkpoint
// their trainer writes; the daemon checks it (checkpoint_check.h: its CRC32C, its framing, that
// it is this job's training at the step named, no further than the job's last step), stores it
// durably in the BlobStore, and records it in the `checkpoints` table, keeping the newest
// `checkpoint.keep` of the job's spec. A requeued job's next lease names the newest one
// (JobService), and the worker downloads it. A checkpoint the trainer then cannot resume from is
// rejected by the worker (reject()): it is deleted, with an event, so the next lease falls back
// to the one before it, and past the last one to a fresh start.
//
// Uploads are fenced like every worker report (lease_fence.h): only the worker holding the job's
// current lease epoch, while the job is placed or running, may store a checkpoint (code
// "stale_epoch" otherwise). An upload arrives as a file the HTTP server streamed to the blob
// store's incoming folder; the order is blob first (fsync + rename + dir fsync), then the row: a
// crash between them leaves an unreferenced blob that reconcile() removes at the next start; a
// row never points at a missing or partial blob. Each upload gets its own blob name, so a
// refused or failed upload deletes only its own bytes.
//
// Ownership: borrows the Store, the BlobStore and the Clock (they outlive it). Thread safety:
// every method is safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "base/log.h"
#include "base/pass_log.h"
#include "daemon/jobs/protocol.h"
#include "daemon/store/blob_store.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::jobs {

using store::CheckpointRow;

struct CheckpointOptions {
  int64_t max_bytes = int64_t{1} << 30;  // largest checkpoint accepted (checkpoints.max_bytes)
  int sweep_interval_ms = 2000;          // how often tick() removes finished jobs' checkpoints
  // How long a succeeded job keeps its final checkpoint, with its outputs (outputs.retention_s);
  // 0: removed with the others at once.
  int64_t final_checkpoint_retention_ms = 0;
};

struct CheckpointUpload {
  int64_t job_id = 0;
  int64_t step = 0;
  LeaseRef lease;
  uint32_t crc32c = 0;        // what the worker computed; must match the bytes
  // The bytes: a file in the blob store's incoming folder (BlobStore::incoming_dir), which put()
  // owns from the call on (moved into the store, or removed).
  std::string staged_file;
  uint64_t bytes = 0;         // its size
};

// A worker's report that a stored checkpoint cannot be resumed from (the trainer refused it, or
// its bytes did not match their checksum on the way down).
struct CheckpointRejection {
  int64_t job_id = 0;
  int64_t step = 0;
  LeaseRef lease;
  std::string error;                    // why (the trainer's message)
  std::optional<int64_t> fallback_step; // what the worker tries next; none: a fresh start
};

class CheckpointService {
 public:
  CheckpointService(store::Store& store, const store::BlobStore& blobs, const Clock& clock,
                    CheckpointOptions options = {});

  // Where uploads are streamed to before put() (the HTTP server's upload folder).
  std::string incoming_dir() const { return blobs_.incoming_dir(); }
  // An upload's bytes that are in memory (no server streamed them to a file: tests, tools),
  // written to the incoming folder for put().
  Expected<std::string> stage(std::string_view bytes) const { return blobs_.stage(bytes); }
  // Verifies and stores one checkpoint. Errors: "invalid_argument" (empty; checksum mismatch,
  // field "crc32c"; another step, or one past the job's last, field "step"),
  // "corrupt_checkpoint" and "checkpoint_mismatch" (field "body"), "payload_too_large",
  // "not_found" (no such job), "stale_epoch" (not the current lease, or the job is no longer
  // placed/running), "unavailable" with field "store" (the disk refused), "io".
  Expected<CheckpointRow> put(const CheckpointUpload& upload);
  // The lease holder rejects a stored checkpoint: its row and blob are deleted and the job gets
  // a `checkpoint_rejected` event (step, error, fallback_step). Fenced like put(); "not_found"
  // when the job has no checkpoint at that step. Returns the checkpoints left, newest first.
  Expected<std::vector<CheckpointRow>> reject(const CheckpointRejection& rejection);
  // Newest first; "not_found" when the job does not exist.
  Expected<std::vector<CheckpointRow>> list(int64_t job_id);
  // One checkpoint's row and the path of its blob; step nullopt: the newest. "not_found" when
  // there is none. The bytes are served from the file as stored (not re-verified, never read
  // whole): the receiver checks them against crc32c.
  Expected<std::pair<CheckpointRow, std::string>> locate(int64_t job_id, std::optional<int64_t> step);

  // Removes the checkpoints (rows and blobs) of jobs that reached a terminal state, but for a
  // succeeded job's newest during final_checkpoint_retention_ms. Rate-limited
  // to one pass per sweep_interval_ms; call it from the daemon's tick. A failed sweep is logged.
  void tick();
  // Where failed sweeps are written (base/pass_log.h); default: stderr. Not owned; set before serving.
  void set_log(Log* log) { log_ = log; }
  // At start: prepares the blob store (its incoming folder, emptied), removes blobs that no row
  // references (a crash between blob and row) and folders of jobs without rows. Returns how many
  // blobs were removed.
  Expected<int> reconcile();
  // One sweep now (tests); returns the number of jobs whose checkpoints were removed.
  Expected<int> sweep_finished();

  const CheckpointOptions& options() const { return options_; }

 private:
  store::Store& store_;
  const store::BlobStore& blobs_;
  const Clock& clock_;
  CheckpointOptions options_;
  std::atomic<uint64_t> nonce_{0};
  std::atomic<int64_t> last_sweep_ms_{0};
  Log* log_ = &stderr_log();
  PassLog sweep_log_{"checkpoint sweep"};
};

}  // namespace jobctl::daemon::jobs
