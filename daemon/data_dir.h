// jobctld's data directory (docs/operations.md, "The data directory"): the SQLite database, the
// checkpoint blobs and the progress history, readable by the daemon's user only, and used by one
// jobctld at a time.
//
// open() creates the folder (mode 0700) or tightens an existing one to 0700 and its database
// files to 0600 (a copy of the database holds every job's spec and the hashes of every token),
// then takes an exclusive lock on `<dir>/jobctld.lock` (flock) and writes the daemon's pid into
// it. A second jobctld on the same folder fails with a message naming the holder's pid: two
// writers on one database would each keep their own queue and lease state and diverge. The lock
// is the kernel's, so a daemon killed with SIGKILL leaves no stale lock behind.
//
// Ownership: a DataDir owns the lock file's descriptor; the lock is held until it is destroyed.
// Thread safety: none needed (made once, at start).
#pragma once

#include <memory>
#include <string>

#include "base/expected.h"

namespace jobctl::daemon {

class DataDir {
 public:
  // Errors: io (cannot create or lock, naming the path), unavailable (another jobctld holds it,
  // naming its pid; field data_dir).
  static Expected<std::unique_ptr<DataDir>> open(const std::string& dir);
  ~DataDir();
  DataDir(const DataDir&) = delete;
  DataDir& operator=(const DataDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  DataDir(std::string path, int lock_fd) : path_(std::move(path)), lock_fd_(lock_fd) {}
  std::string path_;
  int lock_fd_ = -1;
};

}  // namespace jobctl::daemon
