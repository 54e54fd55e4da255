// When each image the worker pulled or took for a job was last used: the order its bounded image
// cache evicts in (worker/image_eviction.h). Kept in a small JSON file in the worker's work
// folder ({"<image id>": <ms since the epoch>, ...}), rewritten whole (a temporary file renamed
// over it) after every change, so that a restarted worker keeps the order and a crash mid-write
// leaves the old file. An unreadable file is an empty log: the cache then removes nothing it did
// not use since.
//
// Thread safety: none; ImageCache (worker/image_cache.h) serialises its use.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "base/expected.h"

namespace jobctl::worker {

class ImageUseLog {
 public:
  explicit ImageUseLog(std::filesystem::path file);

  // Reads the file; a missing one is an empty log, an unreadable or malformed one an error (the
  // log is then empty).
  Status load();
  Status save() const;

  void used(const std::string& id, int64_t now_ms) { last_used_[id] = now_ms; }
  void forget(const std::string& id) { last_used_.erase(id); }
  const std::map<std::string, int64_t>& last_used() const { return last_used_; }
  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
  std::map<std::string, int64_t> last_used_;
};

}  // namespace jobctl::worker
