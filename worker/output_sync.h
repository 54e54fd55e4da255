// A leased job's outputs (docs/job-protocol.md, "Outputs"): the folder JOBCTL_OUTPUT_DIR names,
// made empty for each lease. Before the program starts, restore() downloads the outputs earlier
// leases stored (a resumed or moved job gets them back); upload() sends what the program left
// there, one file at a time, each streamed from its file, and is called when the program has
// exited and when the job is given back (after its last checkpoint's upload, before the report
// that ends the lease). A file restored and unchanged is not sent again. Files are read and
// written without leaving the folder (bundle/folder_files.h): a link the program plants there is
// skipped, never followed; with an `owner` (the job's user under --run-as) only that user's files
// are sent, as fstat on the descriptor read says (never a hard link to the worker's files).
//
// Ownership and thread safety: borrows the ApiClient; one thread (the runner's).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "base/expected.h"
#include "client/api_client.h"

namespace jobctl::worker {

class OutputSync {
 public:
  OutputSync(client::ApiClient& api, int64_t job_id, int64_t worker_id, int64_t epoch, std::string dir,
             std::ostream& log, std::optional<uint32_t> owner = std::nullopt);

  const std::string& dir() const { return dir_; }
  // Downloads the job's stored outputs into the folder. Errors: the daemon's or the disk's.
  Status restore();
  // Uploads the files that are new or changed since restore() or the last upload(). Failures are
  // logged (a file that cannot be sent does not fail the job); returns how many were stored.
  int upload();

 private:
  client::ApiClient& api_;
  const int64_t job_id_, worker_id_, epoch_;
  const std::string dir_;
  std::ostream& log_;
  const std::optional<uint32_t> owner_;
  std::map<std::string, std::pair<uint64_t, int64_t>> sent_;  // path -> (bytes, mtime) stored
};

}  // namespace jobctl::worker
