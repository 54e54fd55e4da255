// The streaming checkpoint check (checkpoint_scan.h) that the daemon runs over every upload: it
// agrees with decode_checkpoint on a real checkpoint whatever the pieces the bytes come in,
// refuses every truncation, every flipped byte and trailing bytes, and its CRC32C is the whole
// input's even when the input is not a checkpoint.
#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint_format.h"
#include "train/checkpoint/checkpoint_scan.h"

namespace jobctl::train {
namespace {

std::vector<uint8_t> sample_bytes(const std::string& kernels = "") {
  TrainingState s;
  s.kernels = kernels;
  s.fingerprint = 0x1234567890abcdefull;
  s.layout_hash = 0xfeedfacecafebeefull;
  s.global_step = 120;
  s.epoch = 3;
  s.cursor = 0;
  s.steps_per_epoch = 40;
  s.batch_size = 32;
  s.train_samples = 1280;
  s.permutation = {4, 0, 2, 1, 3};
  s.epoch_losses = std::vector<float>(40, 1.5f);
  s.optimizer = OptimizerKind::adamw;
  s.params = testing::random_floats(300, 1);
  s.moment1 = testing::random_floats(300, 2);
  s.moment2 = testing::random_floats(300, 3, 0.0f, 1.0f);
  return encode_checkpoint(s);
}

Expected<CheckpointScan> scan(const std::vector<uint8_t>& bytes, size_t piece, uint32_t* crc = nullptr) {
  CheckpointScanner s;
  for (size_t at = 0; at < bytes.size(); at += piece) (void)s.feed(bytes.data() + at, std::min(piece, bytes.size() - at));
  if (crc) *crc = s.crc32c();
  return s.finish();
}

// What jobctl-train writes now: version 3, the kernels' section first; the daemon takes it.
TEST(CheckpointScan, TakesVersion3WithItsKernels) {
  const auto bytes = sample_bytes("OpenBLAS 0.3.21 (Cooperlake)");
  for (size_t piece : {size_t{1}, size_t{5}, bytes.size()}) {
    auto r = scan(bytes, piece);
    ASSERT_TRUE(r) << "pieces of " << piece << ": " << r.error().message;
    EXPECT_EQ(r->version, kCheckpointVersion);
    EXPECT_EQ(r->meta.global_step, 120);
    EXPECT_EQ(r->meta.fingerprint, 0x1234567890abcdefull);
  }
  auto cut = scan(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 50), 7);
  EXPECT_FALSE(cut);
}

TEST(CheckpointScan, AgreesWithDecodeInAnyPieces) {
  const auto bytes = sample_bytes();
  auto state = decode_checkpoint(bytes);
  ASSERT_TRUE(state);
  for (size_t piece : {size_t{1}, size_t{7}, size_t{16}, size_t{4096}, bytes.size()}) {
    auto r = scan(bytes, piece);
    ASSERT_TRUE(r) << "pieces of " << piece << ": " << r.error().message;
    EXPECT_EQ(r->bytes, bytes.size());
    EXPECT_EQ(r->crc32c, crc32c::value(bytes.data(), bytes.size()));
    EXPECT_EQ(r->version, kCheckpointVersionWithoutAccumulation);  // no gradient accumulation in progress
    EXPECT_EQ(r->meta.fingerprint, state->fingerprint);
    EXPECT_EQ(r->meta.layout_hash, state->layout_hash);
    EXPECT_EQ(r->meta.global_step, 120);
    EXPECT_EQ(r->meta.steps_per_epoch, 40);
    EXPECT_EQ(r->meta.batch_size, 32);
    EXPECT_EQ(r->meta.train_samples, 1280);
    EXPECT_EQ(r->meta.optimizer, 1u);
  }
}

TEST(CheckpointScan, RefusesEveryTruncationFlipAndTrailingByte) {
  const auto bytes = sample_bytes();
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    auto r = scan(cut, 64);
    ASSERT_FALSE(r) << "cut at " << n;
    EXPECT_EQ(r.error().code, ErrorCode::corrupt_checkpoint);
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto flipped = bytes;
    flipped[i] ^= 0x10;
    uint32_t crc = 0;
    EXPECT_FALSE(scan(flipped, 100, &crc)) << "byte " << i;
    EXPECT_EQ(crc, crc32c::value(flipped.data(), flipped.size())) << "byte " << i;
  }
  auto longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(scan(longer, 100));
  EXPECT_FALSE(scan(std::vector<uint8_t>(5000, 'j'), 100));
  EXPECT_EQ(checkpoint_tag_name(0x4154454D), "META");
  EXPECT_EQ(checkpoint_tag_name(0x20202001), "?   ");
}

}  // namespace
}  // namespace jobctl::train
