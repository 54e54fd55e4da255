// An in-memory FileSystem for tests of the checkpoint logic, with the faults a disk can produce:
// a write that fails part-way (leaving a torn temporary file), a failing rename, and direct access
// to the stored bytes so a test can truncate or corrupt a file. Every operation is appended to
// log() ("write a.tmp", "rename a.tmp a", "sync_dir d", "remove a"), so tests can check the
// order of the durability protocol.
//
// Thread safety: all members are guarded by one mutex; safe from any thread.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "train/checkpoint/file_system.h"

namespace jobctl::train {

class MemoryFileSystem final : public FileSystem {
 public:
  Status write_file_synced(const std::string& path, std::span<const uint8_t> data) override;
  Status rename(const std::string& from, const std::string& to) override;
  Status sync_directory(const std::string& dir) override;
  Expected<std::vector<uint8_t>> read_file(const std::string& path) override;
  Expected<std::vector<std::string>> list_directory(const std::string& dir) override;
  Status remove_file(const std::string& path) override;
  Status create_directories(const std::string& dir) override;

  // Faults. The next write stores only its first `bytes` bytes and fails (a full disk or a crash
  // mid-write); the next rename fails.
  void fail_next_write_after(size_t bytes);
  void fail_next_rename();

  // Direct access for tests.
  bool exists(const std::string& path) const;
  std::vector<uint8_t> contents(const std::string& path) const;
  void set_contents(const std::string& path, std::vector<uint8_t> data);
  std::vector<std::string> log() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::vector<uint8_t>> files_;
  std::vector<std::string> dirs_;
  std::vector<std::string> log_;
  std::optional<size_t> torn_write_;
  bool fail_rename_ = false;
};

}  // namespace jobctl::train
