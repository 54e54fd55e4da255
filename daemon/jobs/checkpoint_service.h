// The daemon's side of checkpoints (docs/recovery.md): workers upload every checkpoint
// their trainer writes; the daemon verifies its CRC32C, stores it durably in the BlobStore, and
// records it in the `checkpoints` table, keeping the newest `checkpoint.keep` of the job's spec.
// A requeued job's next lease names the newest one (JobService), and the worker downloads it.
//
// Uploads are fenced like every worker report: only the worker holding the job's current lease
// epoch, while the job is placed or running, may store a checkpoint (code "stale_epoch"
// otherwise). The order is blob first (temp + fsync + rename + dir fsync), then the row: a crash
// between them leaves an unreferenced blob that reconcile() removes at the next start; a row
// never points at a missing or partial blob. Each upload gets its own blob name, so a refused or
// failed upload deletes only its own bytes.
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
#include "daemon/jobs/protocol.h"
#include "daemon/store/blob_store.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::jobs {

using store::CheckpointRow;

struct CheckpointOptions {
  int64_t max_bytes = int64_t{1} << 30;  // largest checkpoint accepted (checkpoints.max_bytes)
  int sweep_interval_ms = 2000;          // how often tick() removes finished jobs' checkpoints
};

struct CheckpointUpload {
  int64_t job_id = 0;
  int64_t step = 0;
  LeaseRef lease;
  uint32_t crc32c = 0;        // what the worker computed; must match the bytes
  std::string_view bytes;
};

class CheckpointService {
 public:
  CheckpointService(store::Store& store, const store::BlobStore& blobs, const Clock& clock,
                    CheckpointOptions options = {});

  // Verifies and stores one checkpoint. Errors: "invalid_argument" (empty, checksum mismatch,
  // field "crc32c"), "payload_too_large", "not_found" (no such job), "stale_epoch" (not the
  // current lease, or the job is no longer placed/running), "io".
  Expected<CheckpointRow> put(const CheckpointUpload& upload);
  // Newest first; "not_found" when the job does not exist.
  Expected<std::vector<CheckpointRow>> list(int64_t job_id);
  // One checkpoint's row and bytes; step nullopt: the newest. "not_found" when there is none.
  // The bytes are served as stored (not re-verified): the receiver checks them against crc32c.
  Expected<std::pair<CheckpointRow, std::string>> get(int64_t job_id, std::optional<int64_t> step);

  // Removes the checkpoints (rows and blobs) of jobs that reached a terminal state. Rate-limited
  // to one pass per sweep_interval_ms; call it from the daemon's tick.
  void tick();
  // At start: removes blobs that no row references (a crash between blob and row) and folders of
  // jobs without rows. Returns how many blobs were removed.
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
};

}  // namespace jobctl::daemon::jobs
