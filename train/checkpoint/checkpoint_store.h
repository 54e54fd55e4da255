// The checkpoints of one run in its output folder:
//   ckpt-<step, 12 digits>.ckpt   periodic and signal checkpoints; the newest `keep` are kept
//   final.ckpt                    the state after the last step
// Writes are atomic (write_file_atomic); loading the newest valid checkpoint skips, and reports,
// files that are truncated or corrupt, falling back to the previous one.
//
// Ownership: borrows the FileSystem, which must outlive the store. Thread safety: not
// thread-safe (one training loop uses it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/expected.h"
#include "train/checkpoint/file_system.h"
#include "train/checkpoint/training_state.h"

namespace jobctl::train {

struct WrittenCheckpoint {
  std::string path;
  size_t bytes = 0;
};

struct LoadedCheckpoint {
  std::string path;
  TrainingState state;
  std::vector<std::string> skipped;  // "path: reason" for each newer file that was not valid
};

class CheckpointStore {
 public:
  static constexpr const char* kFinalName = "final.ckpt";

  CheckpointStore(FileSystem& fs, std::string dir, int keep);

  const std::string& dir() const { return dir_; }
  static std::string periodic_name(int64_t step);
  // The step of a periodic checkpoint's file name, or -1 when the name is not one.
  static int64_t step_of(const std::string& name);

  Expected<WrittenCheckpoint> write_periodic(const TrainingState& state);
  Expected<WrittenCheckpoint> write_final(const TrainingState& state);

  // Paths of the checkpoints present, newest first: final.ckpt, then periodic ones by step.
  Expected<std::vector<std::string>> list() const;
  // Reads and decodes one file (error code "io" or "corrupt_checkpoint").
  Expected<TrainingState> load(const std::string& path) const;
  // The newest checkpoint that decodes; error code "not_found" when none does.
  Expected<LoadedCheckpoint> load_newest_valid() const;

 private:
  Status prune();

  FileSystem& fs_;
  std::string dir_;
  int keep_;
};

}  // namespace jobctl::train
