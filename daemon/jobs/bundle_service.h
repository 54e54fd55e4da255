// The daemon's side of code bundles (docs/job-protocol.md, "Code bundles"): a bundle is stored
// once under the SHA-256 of its bytes in the BlobStore's folder 0, and the `bundles` table says
// which users stored it and how many bytes (migration 14).
//
// Memory: an upload arrives as the file the HTTP server streamed it to; it is hashed a piece at a
// time (by the route), checked (its magic) and renamed into place, never read whole. A download is the blob's
// path, which the server sends a piece at a time (daemon/http/blob_download.h).
//
// Quota: each user may hold at most quota_bytes_per_user of bundles, counted from the stored
// sizes (a bundle counts once per user who stored it, however many jobs name it); past it an
// upload is refused with "limit_exceeded" naming bundles.quota_bytes_per_user.
//
// Retention: sweep() deletes a bundle that no unfinished job names, when neither its last upload
// nor the last change of a job naming it is younger than the retention period. Order: the rows
// go first (one transaction, in which the jobs are checked), then the file; a crash between them
// leaves a file without rows, which reconcile() adopts at the next start (user "", stored now)
// so that the next sweeps delete it in turn. Rows whose file is missing (a crash between the row
// and the rename of an upload) are dropped by reconcile(). Uploads and sweeps are serialised, so
// a sweep never deletes a bundle an upload is adding a row for.
//
// Ownership: borrows the Store, the BlobStore and the Clock (they outlive it). Thread safety:
// every method is safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/expected.h"
#include "base/mutex.h"
#include "daemon/store/blob_store.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::jobs {

struct BundleOptions {
  int64_t quota_bytes_per_user = int64_t{4} << 30;
  int64_t retention_ms = int64_t{7} * 24 * 3600 * 1000;
};

struct StoredBundle {
  std::string sha256;
  int64_t bytes = 0;
};

class BundleService {
 public:
  BundleService(store::Store& store, const store::BlobStore& blobs, const Clock& clock, BundleOptions options);
  BundleService(const BundleService&) = delete;
  BundleService& operator=(const BundleService&) = delete;

  // Start-up: prepares the blob store and matches files and rows (above). Returns how many rows
  // it added or dropped.
  Expected<int> reconcile() JOBCTL_EXCLUDES(mu_);
  // Stores the bundle in `staged_file` (in the blob store's incoming folder; this call owns it
  // from now on and removes it unless it becomes the blob) for `user`, under `sha256`, the
  // SHA-256 of the file's bytes (the caller hashed the file a piece at a time:
  // daemon/auth/secret.h). Errors: "invalid_argument" (field "body") when it is not a bundle;
  // "limit_exceeded" (field "bundles.quota_bytes_per_user") past the quota; the store's and the
  // disk's.
  Expected<StoredBundle> store(const std::string& user, const std::string& staged_file, const std::string& sha256)
      JOBCTL_EXCLUDES(mu_);
  // Writes bytes in memory to a new file in the incoming folder (requests that did not come
  // through the HTTP server: tests, tools), for store().
  Expected<std::string> stage(std::string_view bytes) const { return blobs_.stage(bytes); }
  // The file of the bundle `sha256`; "not_found" when there is none.
  Expected<std::string> path_of(const std::string& sha256) const;
  // Deletes the bundles past their retention (above). Returns how many.
  Expected<int> sweep() JOBCTL_EXCLUDES(mu_);
  // The housekeeping tick: sweep() at most once per sweep period (a tenth of the retention,
  // between one second and ten minutes).
  void tick() JOBCTL_EXCLUDES(mu_);

  std::string incoming_dir() const { return blobs_.incoming_dir(); }
  const BundleOptions& options() const { return options_; }

 private:
  store::Store& store_;
  const store::BlobStore& blobs_;
  const Clock& clock_;
  const BundleOptions options_;
  Mutex mu_;  // uploads and sweeps, one at a time
  int64_t next_sweep_ms_ JOBCTL_GUARDED_BY(mu_) = 0;
};

}  // namespace jobctl::daemon::jobs
