// The file operations checkpoints need, behind an interface so that the checkpoint logic can be
// tested in memory (MemoryFileSystem, with injected failures) and runs on the disk through
// PosixFileSystem.
//
// Durability contract of write_file_atomic(): the file appears under its name either complete or
// not at all, and survives a crash once the call returns: write "<name>.tmp", fsync it, rename it
// over "<name>", fsync the directory (so the rename itself is durable).
//
// Errors are Status values with code "io" and a message naming the path and the system error.
// Thread safety: PosixFileSystem is stateless and safe from any thread; see MemoryFileSystem.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/expected.h"

namespace jobctl::train {

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Creates or truncates `path`, writes all of `data` and flushes it to stable storage.
  virtual Status write_file_synced(const std::string& path, std::span<const uint8_t> data) = 0;
  // Atomically replaces `to` with `from`.
  virtual Status rename(const std::string& from, const std::string& to) = 0;
  // Makes the directory's entries (creations, renames, removals) durable.
  virtual Status sync_directory(const std::string& dir) = 0;
  virtual Expected<std::vector<uint8_t>> read_file(const std::string& path) = 0;
  // Names (not paths) of the regular files in `dir`, in no particular order.
  virtual Expected<std::vector<std::string>> list_directory(const std::string& dir) = 0;
  virtual Status remove_file(const std::string& path) = 0;
  virtual Status create_directories(const std::string& dir) = 0;
};

// The real thing: POSIX open/write/fsync/rename.
class PosixFileSystem final : public FileSystem {
 public:
  Status write_file_synced(const std::string& path, std::span<const uint8_t> data) override;
  Status rename(const std::string& from, const std::string& to) override;
  Status sync_directory(const std::string& dir) override;
  Expected<std::vector<uint8_t>> read_file(const std::string& path) override;
  Expected<std::vector<std::string>> list_directory(const std::string& dir) override;
  Status remove_file(const std::string& path) override;
  Status create_directories(const std::string& dir) override;
};

std::string join_path(const std::string& dir, const std::string& name);

// temp file + fsync + rename + directory fsync (see the contract above).
Status write_file_atomic(FileSystem& fs, const std::string& dir, const std::string& name,
                         std::span<const uint8_t> data);

}  // namespace jobctl::train
