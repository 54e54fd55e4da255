// The daemon's checkpoint blob store: files on disk under one root folder, one folder per job
// (`<root>/job-<id>/<name>`). A blob is written to `<name>.tmp`, fsynced, renamed over `<name>`,
// and the folder is fsynced, so a blob under its final name is always complete: a crash leaves
// at worst a `.tmp` file, which the next write or remove_job() clears.
//
// Uploads arrive as files in `<root>/.incoming` (the HTTP server streams each request body
// there, so none is ever held in memory); adopt() moves a verified one into its job's folder
// (fsync, rename, folder fsync). The files are created 0600 under folders made 0700.
//
// The store knows nothing of checksums or rows: CheckpointService verifies bytes before they are
// adopted and records them in SQLite after (docs/recovery.md).
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

// An upload's file in the incoming folder, owned by the call that checks and adopts it: removed
// when this goes out of scope unless keep() was called (it became a blob). Not copyable.
class StagedFile {
 public:
  explicit StagedFile(std::string path) : path_(std::move(path)) {}
  ~StagedFile();
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  void keep() { kept_ = true; }

 private:
  std::string path_;
  bool kept_ = false;
};

class BlobStore {
 public:
  // `root` is created on first write.
  explicit BlobStore(std::string root) : root_(std::move(root)) {}

  // The folder uploads are streamed into before they are checked (same file system as the
  // blobs, so adopt() is a rename).
  std::string incoming_dir() const;
  // Creates the root and the incoming folder (0700), and empties the incoming folder of what a
  // previous run left there. Call once at start, before serving.
  Status prepare() const;
  // Writes `bytes` to a new file in the incoming folder and returns its path (uploads that did
  // not come through the HTTP server: tests, tools).
  Expected<std::string> stage(std::string_view bytes) const;
  // Durably moves the file at `staged` (in the incoming folder) to the job's blob `name`
  // (replacing any blob of that name). On error the staged file is left for the caller.
  // Errors: "invalid_argument" for a name with '/' or starting with '.'; "unavailable" with
  // field "store" when the disk refuses; "io" otherwise.
  Status adopt(int64_t job_id, std::string_view name, const std::string& staged) const;
  // stage() then adopt().
  Status write(int64_t job_id, std::string_view name, std::string_view bytes) const;
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
