// Files inside a folder, never leaving it: a job's outputs are read from JOBCTL_OUTPUT_DIR (which
// the job's program controls) and written under a folder the user named (`jobctl outputs --to`)
// or a new lease's JOBCTL_OUTPUT_DIR. Every path follows base/relative_path.h, and each of its
// components is opened relative to the one before with O_NOFOLLOW, so neither a ".." nor a
// symbolic link planted in the folder (even one swapped in while the walk runs) leads out of it.
//
// Thread safety: pure functions over the file system.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/expected.h"

namespace jobctl::bundle {

struct FolderFile {
  std::string path;   // relative, '/'-separated
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;
};

// The regular files under `dir`, by path; links and special files are left out (listed in
// `skipped` when given). Errors: io when `dir` cannot be read.
Expected<std::vector<FolderFile>> list_folder_files(const std::string& dir, std::vector<std::string>* skipped = nullptr);

// Opens `path` (relative, '/'-separated, no empty, "." or ".." component) beneath the folder
// `dir_fd`, following no link on the way or at its end: openat2 with RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS where the kernel has it, else one component at a
// time with O_NOFOLLOW. `flags` are open(2)'s for the last component (O_NOFOLLOW and O_CLOEXEC are
// added). Errors: invalid_argument for a path with such a component; io otherwise (errno kept).
// The caller closes the descriptor. This is how the worker reaches every file of a job's: what it
// opens is what it then checks (fstat) and reads, so nothing swapped in after the check is read.
Expected<int> open_beneath(int dir_fd, const std::string& path, int flags);

// The regular file behind `fd` (of the user `owner`, when given): its size. Errors: io naming
// `shown` when it is not one (a FIFO, a folder, another user's file).
Expected<uint64_t> check_regular_file(int fd, std::optional<uint32_t> owner, const std::string& shown);

// Opens `dir`/`path` for reading, never through a link (open_beneath), and checks it is a
// regular file (of `owner`, when given: a program running as another user names only its own).
// Errors: invalid_argument (field "path") for a path base/relative_path.h refuses; io otherwise.
// The caller closes the descriptor.
Expected<int> open_inside_for_read(const std::string& dir, const std::string& path,
                                   std::optional<uint32_t> owner = std::nullopt);

// A file being written at `dir`/`path`: created (folders on the way made 0755) as a temporary
// file next to it; commit() fsyncs and renames it into place, replacing a file (or a link: the
// link itself, never its target) there; destroyed uncommitted, it is removed.
class FileInside {
 public:
  // Errors: invalid_argument (field "path") for a path base/relative_path.h refuses; io when a
  // component on the way is not a folder (a link, say) or the disk refuses.
  static Expected<FileInside> create(const std::string& dir, const std::string& path);
  FileInside(FileInside&& other) noexcept;
  FileInside& operator=(FileInside&&) = delete;
  ~FileInside();

  int fd() const { return fd_; }
  Status commit();

 private:
  FileInside(int parent_fd, int fd, std::string tmp_name, std::string name, std::string shown);
  int parent_fd_ = -1;
  int fd_ = -1;
  std::string tmp_name_, name_, shown_;
  bool done_ = false;
};

}  // namespace jobctl::bundle
