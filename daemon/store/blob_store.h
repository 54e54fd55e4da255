// The daemon's checkpoint blob store: files on disk under one root folder, one folder per job
// (`<root>/job-<id>/<name>`). A blob is written to `<name>.tmp`, fsynced, renamed over `<name>`,
// and the folder is fsynced, so a blob under its final name is always complete: a crash leaves
// at worst a `.tmp` file, which the next write or remove_job() clears.
//
// The store knows nothing of checksums or rows: CheckpointService verifies bytes before they are
// written and records them in SQLite after (docs/recovery.md).
//
// Ownership and thread safety: owns nothing but the root path; every method is safe from any
// thread (distinct names do not interfere; writers of the same name must be serialised by the
// caller, which CheckpointService does by naming blobs by step and lease epoch).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"

namespace jobctl::daemon::store {

class BlobStore {
 public:
  // `root` is created on first write.
  explicit BlobStore(std::string root) : root_(std::move(root)) {}

  // Durably writes `bytes` as the job's blob `name` (replacing any blob of that name).
  // Errors: "invalid_argument" for a name with '/' or starting with '.', "io" otherwise.
  Status write(int64_t job_id, std::string_view name, std::string_view bytes) const;
  // The whole blob; code "not_found" when absent.
  Expected<std::string> read(int64_t job_id, std::string_view name) const;
  // Removes one blob (absent is fine).
  Status remove(int64_t job_id, std::string_view name) const;
  // Removes the job's folder and everything in it (absent is fine).
  Status remove_job(int64_t job_id) const;
  // Ids of the jobs that have a folder (for reconciling with the database).
  std::vector<int64_t> job_ids() const;
  // Names of a job's blobs (no .tmp files).
  std::vector<std::string> names(int64_t job_id) const;

  std::string path_of(int64_t job_id, std::string_view name) const;
  const std::string& root() const { return root_; }

 private:
  std::string job_dir(int64_t job_id) const;
  std::string root_;
};

}  // namespace jobctl::daemon::store
