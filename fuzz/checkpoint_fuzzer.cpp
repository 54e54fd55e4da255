// libFuzzer target: the checkpoint reader (train/checkpoint/checkpoint_format.h) on arbitrary
// bytes. Properties: never crashes, over-allocates or trips a sanitizer; a checkpoint that
// decodes re-encodes to bytes that decode and re-encode to the same bytes (compared as bytes,
// since weights may be NaN).
//
// JOBCTL_FUZZ_WRITE_SEED=FILE writes a small valid checkpoint there at start-up (how
// fuzz/corpus/checkpoint/seed was made).
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <span>

#include "train/checkpoint/checkpoint_format.h"

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
  auto state = jobctl::train::decode_checkpoint(std::span<const uint8_t>(data, size));
  if (!state) return 0;
  const auto bytes = jobctl::train::encode_checkpoint(*state);
  auto again = jobctl::train::decode_checkpoint(bytes);
  if (!again) std::abort();
  if (jobctl::train::encode_checkpoint(*again) != bytes) std::abort();
  return 0;
}
