// Checks a checkpoint file's framing as its bytes go by, without holding them
// (docs/checkpoint-format.md): the header (magic, a version this build reads, the total length,
// the header's CRC32C), every section's head and CRC32C, no section twice, no trailing bytes —
// and reads the META section (which training the checkpoint belongs to, and its position).
// Payloads other than META are not interpreted: decode_checkpoint() does that when the trainer
// loads the file. The daemon runs a scanner over every uploaded checkpoint as it streams the
// file from disk, so a checkpoint of any size costs it a fixed few hundred bytes of memory.
//
// Thread safety: a CheckpointScanner is a plain value; use one per file from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "base/expected.h"

namespace jobctl::train {

// The META section's fields (docs/checkpoint-format.md).
struct CheckpointMeta {
  uint64_t fingerprint = 0;   // training_fingerprint(spec) of the training it belongs to
  uint64_t layout_hash = 0;
  int64_t global_step = 0;    // steps completed
  int64_t epoch = 0;
  int64_t cursor = 0;
  int64_t steps_per_epoch = 0;
  int64_t batch_size = 0;
  int64_t train_samples = 0;
  uint32_t optimizer = 0;     // 0 SGD, 1 AdamW
};

struct CheckpointScan {
  uint32_t version = 0;
  uint64_t bytes = 0;         // the whole file
  uint32_t crc32c = 0;        // CRC32C of the whole file
  CheckpointMeta meta;
};

// A section tag as its four characters ("META"; '?' for a byte that is not printable ASCII).
std::string checkpoint_tag_name(uint32_t tag);

class CheckpointScanner {
 public:
  // The next bytes of the file. Fails (code corrupt_checkpoint) as soon as they cannot be part
  // of a checkpoint; every later call fails the same way.
  Status feed(const void* data, size_t n);
  // After the last byte: the summary of a well-framed checkpoint, or why it is not one.
  Expected<CheckpointScan> finish();
  // CRC32C of every byte fed so far (also of a file that is not a checkpoint).
  uint32_t crc32c() const { return file_crc_; }

 private:
  enum class Part { header, section_head, payload, section_crc, end };
  Error fail(std::string message);
  Status complete_part();

  Part part_ = Part::header;
  std::string pending_;          // the bytes of the current fixed-size part (header, heads, CRCs)
  size_t want_ = 32;             // bytes of the current fixed-size part
  uint64_t offset_ = 0;
  uint32_t file_crc_ = 0;
  std::optional<Error> error_;
  CheckpointScan scan_;
  uint32_t sections_ = 0;        // announced by the header
  uint32_t sections_seen_ = 0;
  uint64_t total_ = 0;           // announced by the header
  uint32_t tag_ = 0;
  uint64_t payload_left_ = 0;
  uint32_t section_crc_ = 0;     // running CRC of the current section
  std::string meta_bytes_;       // the META payload (small)
  bool have_meta_ = false;
  std::set<uint32_t> tags_;
};

}  // namespace jobctl::train
