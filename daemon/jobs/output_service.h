// The daemon's side of a job's outputs (docs/job-protocol.md, "Outputs"): the files a program
// leaves in JOBCTL_OUTPUT_DIR, which its worker uploads one by one when the program exits and
// when the job is moved or interrupted. Each file is a blob in its own BlobStore (one folder per
// job, under <data_dir>/outputs) and a row of the `job_outputs` table (migration 16) naming its
// path, size, owner and upload time; a second upload of the same path replaces the first.
//
// Uploads are fenced like checkpoints (lease_fence.h): only the worker holding the job's current
// lease may store an output. Limits: a job's outputs together at most max_bytes_per_job (past it
// "payload_too_large", field "outputs.max_bytes_per_job"); a user's outputs, over all their jobs,
// at most quota_bytes_per_user ("limit_exceeded", field "outputs.quota_bytes_per_user"). Paths
// follow base/relative_path.h (else "invalid_argument", field "path").
//
// Memory: an upload arrives as the file the HTTP server streamed it to and is renamed into place;
// a download is the blob's path, sent a piece at a time (daemon/http/blob_download.h).
//
// Order: blob first (BlobStore::adopt: fsync, rename, folder fsync), then the row; a crash between
// them leaves a blob no row names, which reconcile() removes at the next start. Retention: sweep()
// deletes the outputs of jobs that finished more than retention_ms ago, rows first (one
// transaction), then the job's folder; a crash between them leaves a folder without rows, which
// reconcile() removes.
//
// Ownership: borrows the Store, the BlobStore and the Clock (they outlive it). Thread safety:
// every method is safe from any thread; uploads and sweeps run one at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "base/mutex.h"
#include "daemon/jobs/protocol.h"
#include "daemon/store/blob_store.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::jobs {

using store::OutputRow;

struct OutputOptions {
  int64_t max_bytes_per_job = int64_t{1} << 30;        // outputs.max_bytes_per_job
  int64_t quota_bytes_per_user = int64_t{10} << 30;    // outputs.quota_bytes_per_user
  int64_t retention_ms = int64_t{7} * 24 * 3600 * 1000; // outputs.retention_s
};

struct OutputUpload {
  int64_t job_id = 0;
  std::string path;           // relative, '/'-separated
  LeaseRef lease;
  // The bytes: a file in the blob store's incoming folder, which put() owns from the call on
  // (moved into the store, or removed).
  std::string staged_file;
  uint64_t bytes = 0;
};

class OutputService {
 public:
  OutputService(store::Store& store, const store::BlobStore& blobs, const Clock& clock, OutputOptions options);
  OutputService(const OutputService&) = delete;
  OutputService& operator=(const OutputService&) = delete;

  std::string incoming_dir() const { return blobs_.incoming_dir(); }
  // Bytes in memory (no server streamed them to a file: tests, tools) written to the incoming
  // folder for put().
  Expected<std::string> stage(std::string_view bytes) const { return blobs_.stage(bytes); }
  // Stores one output file. Errors: "invalid_argument" (field "path"), "payload_too_large"
  // (field "outputs.max_bytes_per_job"), "limit_exceeded" (field "outputs.quota_bytes_per_user"),
  // "not_found" (no such job), "stale_epoch" (not the current lease), the store's and the disk's.
  Expected<OutputRow> put(const OutputUpload& upload) JOBCTL_EXCLUDES(mu_);
  // The job's outputs by path; "not_found" when the job does not exist.
  Expected<std::vector<OutputRow>> list(int64_t job_id);
  // One output's row and the path of its blob; "not_found" when the job has none at `path`,
  // "invalid_argument" (field "path") for a path base/relative_path.h refuses.
  Expected<std::pair<OutputRow, std::string>> locate(int64_t job_id, const std::string& path);

  // At start: prepares the blob store and removes blobs no row names and rows whose blob is
  // missing. Returns how many it removed.
  Expected<int> reconcile() JOBCTL_EXCLUDES(mu_);
  // Deletes the outputs of jobs finished longer than the retention ago. Returns how many jobs'.
  Expected<int> sweep() JOBCTL_EXCLUDES(mu_);
  // The housekeeping tick: sweep() at most once per sweep period (a tenth of the retention,
  // between one second and ten minutes); a failed sweep is logged and retried at the next.
  void tick() JOBCTL_EXCLUDES(mu_);

  const OutputOptions& options() const { return options_; }

 private:
  store::Store& store_;
  const store::BlobStore& blobs_;
  const Clock& clock_;
  const OutputOptions options_;
  std::atomic<uint64_t> nonce_{0};
  Mutex mu_;  // uploads and sweeps, one at a time
  int64_t next_sweep_ms_ JOBCTL_GUARDED_BY(mu_) = 0;
};

}  // namespace jobctl::daemon::jobs
