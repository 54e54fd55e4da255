// libFuzzer target: the checkpoint reader (train/checkpoint/checkpoint_format.h) and the
// streaming check the daemon runs over every uploaded checkpoint (checkpoint_scan.h) on
// arbitrary bytes. Properties: never crashes, over-allocates or trips a sanitizer; a checkpoint
// that decodes re-encodes to bytes that decode and re-encode to the same bytes (compared as
// bytes, since weights may be NaN); the scanner's verdict and META do not depend on how the bytes
// are split into pieces, its CRC32C is the whole input's, and whatever decodes, the scanner
// accepts with the same META (so the daemon never refuses a checkpoint the trainer could load).
//
// JOBCTL_FUZZ_WRITE_SEED=FILE writes a small valid checkpoint there at start-up (how
// fuzz/corpus/checkpoint/seed was made).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <span>

#include "base/crc32c.h"
#include "train/checkpoint/checkpoint_format.h"
#include "train/checkpoint/checkpoint_scan.h"

namespace {

using jobctl::train::CheckpointScan;
using jobctl::train::CheckpointScanner;

// The scanner's verdict over `data` fed in pieces of `piece` bytes (0: at once).
jobctl::Expected<CheckpointScan> scan(const uint8_t* data, size_t size, size_t piece, uint32_t& crc) {
  CheckpointScanner s;
  if (piece == 0) piece = size == 0 ? 1 : size;
  for (size_t at = 0; at < size; at += piece) (void)s.feed(data + at, std::min(piece, size - at));
  crc = s.crc32c();
  return s.finish();
}

bool same(const CheckpointScan& a, const CheckpointScan& b) {
  return a.version == b.version && a.bytes == b.bytes && a.crc32c == b.crc32c &&
         a.meta.fingerprint == b.meta.fingerprint && a.meta.layout_hash == b.meta.layout_hash &&
         a.meta.global_step == b.meta.global_step && a.meta.epoch == b.meta.epoch && a.meta.cursor == b.meta.cursor &&
         a.meta.steps_per_epoch == b.meta.steps_per_epoch && a.meta.batch_size == b.meta.batch_size &&
         a.meta.train_samples == b.meta.train_samples && a.meta.optimizer == b.meta.optimizer;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* path = std::getenv("JOBCTL_FUZZ_WRITE_SEED")) {
    jobctl::train::TrainingState s;
    s.fingerprint = 0x1234;
    s.layout_hash = 0x5678;
    s.global_step = 5;
    s.epoch = 1;
    s.cursor = 2;
    s.steps_per_epoch = 4;
    s.batch_size = 2;
    s.train_samples = 8;
    s.permutation = {3, 1, 2, 0, 7, 6, 5, 4};
    s.epoch_losses = {2.5f, 2.25f};
    s.last_loss = 2.25f;
    s.has_eval = true;
    s.eval_epoch = 0;
    s.train_loss = 2.4;
    s.test_loss = 2.3;
    s.test_accuracy = 0.25;
    s.params = {0.5f, -0.25f, 1.0f};
    s.moment1 = {0.01f, 0.02f, 0.03f};
    s.moment2 = {0.001f, 0.002f, 0.003f};
    const auto bytes = jobctl::train::encode_checkpoint(s);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                static_cast<std::streamsize>(bytes.size()));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint32_t crc = jobctl::crc32c::value(data, size);
  uint32_t whole_crc = 0, pieces_crc = 0;
  auto whole = scan(data, size, 0, whole_crc);
  auto pieces = scan(data, size, size == 0 ? 1 : 1 + data[size / 2] % 61, pieces_crc);
  if (whole_crc != crc || pieces_crc != crc) std::abort();
  if (whole.has_value() != pieces.has_value()) std::abort();
  if (whole && !same(*whole, *pieces)) std::abort();
  auto state = jobctl::train::decode_checkpoint(std::span<const uint8_t>(data, size));
  if (!state) return 0;
  if (!whole || whole->crc32c != crc || whole->meta.fingerprint != state->fingerprint ||
      whole->meta.global_step != state->global_step || whole->meta.batch_size != state->batch_size)
    std::abort();
  const auto bytes = jobctl::train::encode_checkpoint(*state);
  auto again = jobctl::train::decode_checkpoint(bytes);
  if (!again) std::abort();
  if (jobctl::train::encode_checkpoint(*again) != bytes) std::abort();
  return 0;
}
