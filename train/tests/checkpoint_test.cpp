// The checkpoint format and store: round trip, bytes as a pure function of the state, detection
// of every truncation and every flipped byte, the write protocol (temp, fsync, rename, directory
// fsync) on an in-memory file system with injected faults, keep-K, falling back to the previous
// checkpoint, and the same on the real disk.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/crc32c.h"
#include "test_util.h"
#include "train/checkpoint/checkpoint_format.h"
#include "train/checkpoint/checkpoint_store.h"
#include "train/checkpoint/memory_file_system.h"

namespace jobctl::train {
namespace {

TrainingState sample_state(OptimizerKind opt, size_t params = 37, int64_t step = 120) {
  TrainingState s;
  s.fingerprint = 0x1234567890abcdefull;
  s.layout_hash = 0xfeedfacecafebeefull;
  s.global_step = step;
  s.epoch = 3;
  s.cursor = 640;
  s.steps_per_epoch = 40;
  s.batch_size = 32;
  s.train_samples = 1280;
  s.shuffle_rng = {1, 2, 3, 0xffffffffffffffffull};
  s.permutation = {4, 0, 2, 1, 3};
  s.epoch_losses = {2.5f, 2.25f, -0.0f};
  s.last_loss = 1.75f;
  s.has_eval = true;
  s.eval_epoch = 2;
  s.train_loss = 0.123456789;
  s.test_loss = 0.5;
  s.test_accuracy = 0.8125;
  s.optimizer = opt;
  s.params = testing::random_floats(params, 1);
  s.moment1 = testing::random_floats(params, 2);
  if (opt == OptimizerKind::adamw) s.moment2 = testing::random_floats(params, 3, 0.0f, 1.0f);
  return s;
}

TEST(CheckpointFormat, RoundTripsBothOptimizers) {
  for (OptimizerKind opt : {OptimizerKind::adamw, OptimizerKind::sgd}) {
    const TrainingState s = sample_state(opt);
    const auto bytes = encode_checkpoint(s);
    auto back = decode_checkpoint(bytes);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_TRUE(*back == s);
    EXPECT_EQ(encode_checkpoint(*back), bytes);
  }
}

TEST(CheckpointFormat, BytesArePureFunctionOfState) {
  const TrainingState s = sample_state(OptimizerKind::adamw);
  EXPECT_EQ(encode_checkpoint(s), encode_checkpoint(s));
  TrainingState t = s;
  t.params[5] = std::nextafter(t.params[5], 10.0f);  // one ulp
  EXPECT_NE(encode_checkpoint(s), encode_checkpoint(t));
  // Fixed layout: magic, version 1 little-endian, then the total length.
  const auto b = encode_checkpoint(s);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 8), "JOBCTLCK");
  EXPECT_EQ(b[8], 1);
  EXPECT_EQ(b[9], 0);
  uint64_t total = 0;
  for (int i = 0; i < 8; ++i) total |= static_cast<uint64_t>(b[16 + static_cast<size_t>(i)]) << (8 * i);
  EXPECT_EQ(total, b.size());
}

TEST(CheckpointFormat, EveryTruncationIsDetected) {
  const auto bytes = encode_checkpoint(sample_state(OptimizerKind::adamw, 5));
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = decode_checkpoint(std::span(bytes.data(), n));
    ASSERT_FALSE(r) << "a file cut to " << n << " of " << bytes.size() << " bytes was accepted";
    EXPECT_EQ(r.error().code, ErrorCode::corrupt_checkpoint);
  }
}

TEST(CheckpointFormat, EveryFlippedByteIsDetected) {
  const auto bytes = encode_checkpoint(sample_state(OptimizerKind::sgd, 5));
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}}) {
      auto bad = bytes;
      bad[i] ^= mask;
      ASSERT_FALSE(decode_checkpoint(bad)) << "flipping byte " << i << " went unnoticed";
    }
  }
}

TEST(CheckpointFormat, RejectsOtherVersionsAndGarbage) {
  auto bytes = encode_checkpoint(sample_state(OptimizerKind::adamw, 3));
  auto r = decode_checkpoint(std::vector<uint8_t>(100, 0x41));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("magic"), std::string::npos);
  // A version bump with a valid header CRC: refused by name.
  bytes[8] = 2;
  const uint32_t crc = crc32c::value(bytes.data(), 28);
  for (int i = 0; i < 4; ++i) bytes[28 + static_cast<size_t>(i)] = static_cast<uint8_t>(crc >> (8 * i));
  auto v = decode_checkpoint(bytes);
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message.find("version 2"), std::string::npos) << v.error().message;
}

void set_version(std::vector<uint8_t>& bytes, uint8_t version) {
  bytes[8] = version;
  const uint32_t crc = crc32c::value(bytes.data(), 28);
  for (int i = 0; i < 4; ++i) bytes[28 + static_cast<size_t>(i)] = static_cast<uint8_t>(crc >> (8 * i));
}

TEST(CheckpointFormat, KernelsNameIsVersion3sFirstSection) {
  TrainingState s = sample_state(OptimizerKind::adamw, 7);
  const auto unnamed = encode_checkpoint(s);
  s.kernels = "OpenBLAS 0.3.21 (Cooperlake)";
  const auto bytes = encode_checkpoint(s);
  EXPECT_EQ(bytes[8], 3);
  EXPECT_EQ(std::string(bytes.begin() + 32, bytes.begin() + 36), "KERN");  // right after the header
  auto back = decode_checkpoint(bytes);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->kernels, s.kernels);
  EXPECT_TRUE(*back == s);
  EXPECT_EQ(encode_checkpoint(*back), bytes);
  // Without a name: version 1, the bytes earlier builds write and read.
  EXPECT_EQ(unnamed[8], 1);
  auto old = decode_checkpoint(unnamed);
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->kernels, "");
  // Inside an optimizer step: version 3 with ACCU as well.
  s.micro_step = 2;
  s.partial_grads = testing::random_floats(s.params.size(), 9);
  s.partial_row_losses = {0.5f, 0.25f};
  const auto accumulating = encode_checkpoint(s);
  EXPECT_EQ(accumulating[8], 3);
  auto mid = decode_checkpoint(accumulating);
  ASSERT_TRUE(mid) << mid.error().message;
  EXPECT_TRUE(*mid == s);
  s.kernels.clear();
  EXPECT_EQ(encode_checkpoint(s)[8], 2);
}

TEST(CheckpointFormat, Version3IsCheckedLikeTheOthers) {
  TrainingState s = sample_state(OptimizerKind::sgd, 4);
  s.kernels = "portable";
  const auto bytes = encode_checkpoint(s);
  for (size_t n = 0; n < bytes.size(); ++n)
    ASSERT_FALSE(decode_checkpoint(std::span(bytes.data(), n))) << "cut to " << n << " bytes";
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto bad = bytes;
    bad[i] ^= 0x01;
    ASSERT_FALSE(decode_checkpoint(bad)) << "flipping byte " << i << " went unnoticed";
  }
  // A version 1 file relabelled as version 3 lacks the kernels' section.
  auto relabelled = encode_checkpoint(sample_state(OptimizerKind::sgd, 4));
  set_version(relabelled, 3);
  auto r = decode_checkpoint(relabelled);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("KERN"), std::string::npos) << r.error().message;
  // And a version 2 reader's view: a version 3 file relabelled as 2 has a section it does not know.
  auto as_v2 = bytes;
  set_version(as_v2, 2);
  EXPECT_FALSE(decode_checkpoint(as_v2));
  // A name longer than the format holds is cut, not refused.
  s.kernels = std::string(kCheckpointKernelsMaxBytes + 10, 'k');
  auto cut = decode_checkpoint(encode_checkpoint(s));
  ASSERT_TRUE(cut) << cut.error().message;
  EXPECT_EQ(cut->kernels.size(), kCheckpointKernelsMaxBytes);
}

TEST(CheckpointStore, WritesThroughTempFsyncRenameAndDirectorySync) {
  MemoryFileSystem fs;
  CheckpointStore store(fs, "/out", 3);
  auto w = store.write_periodic(sample_state(OptimizerKind::adamw, 10, 500));
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->path, "/out/ckpt-000000000500.ckpt");
  const std::vector<std::string> want = {"write /out/ckpt-000000000500.ckpt.tmp",
                                         "rename /out/ckpt-000000000500.ckpt.tmp /out/ckpt-000000000500.ckpt",
                                         "sync_dir /out"};
  EXPECT_EQ(fs.log(), want);
  EXPECT_EQ(fs.contents(w->path).size(), w->bytes);
  EXPECT_FALSE(fs.exists("/out/ckpt-000000000500.ckpt.tmp"));
}

TEST(CheckpointStore, KeepsTheNewestK) {
  MemoryFileSystem fs;
  CheckpointStore store(fs, "/out", 2);
  for (int64_t step : {100, 200, 300, 400}) ASSERT_TRUE(store.write_periodic(sample_state(OptimizerKind::sgd, 4, step)));
  ASSERT_TRUE(store.write_final(sample_state(OptimizerKind::sgd, 4, 450)));
  auto list = store.list();
  ASSERT_TRUE(list);
  const std::vector<std::string> want = {"/out/final.ckpt", "/out/ckpt-000000000400.ckpt",
                                         "/out/ckpt-000000000300.ckpt"};
  EXPECT_EQ(*list, want);
}

TEST(CheckpointStore, FallsBackPastTruncatedAndCorruptFiles) {
  MemoryFileSystem fs;
  CheckpointStore store(fs, "/out", 3);
  for (int64_t step : {10, 20, 30}) ASSERT_TRUE(store.write_periodic(sample_state(OptimizerKind::adamw, 8, step)));
  // The newest is torn (as by a crash with no atomic rename), the next has a flipped bit.
  auto newest = fs.contents("/out/ckpt-000000000030.ckpt");
  newest.resize(newest.size() / 2);
  fs.set_contents("/out/ckpt-000000000030.ckpt", newest);
  auto middle = fs.contents("/out/ckpt-000000000020.ckpt");
  middle[middle.size() - 40] ^= 0x10;
  fs.set_contents("/out/ckpt-000000000020.ckpt", middle);
  auto loaded = store.load_newest_valid();
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->path, "/out/ckpt-000000000010.ckpt");
  EXPECT_EQ(loaded->state.global_step, 10);
  ASSERT_EQ(loaded->skipped.size(), 2u);
  EXPECT_NE(loaded->skipped[0].find("ckpt-000000000030"), std::string::npos);
  EXPECT_NE(loaded->skipped[1].find("CRC"), std::string::npos) << loaded->skipped[1];
  // Nothing valid at all: a clear not_found.
  fs.set_contents("/out/ckpt-000000000010.ckpt", {1, 2, 3});
  auto none = store.load_newest_valid();
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::not_found);
}

TEST(CheckpointStore, FailedWritesLeaveThePreviousCheckpointIntact) {
  MemoryFileSystem fs;
  CheckpointStore store(fs, "/out", 3);
  ASSERT_TRUE(store.write_periodic(sample_state(OptimizerKind::adamw, 8, 10)));
  fs.fail_next_write_after(100);
  auto torn = store.write_periodic(sample_state(OptimizerKind::adamw, 8, 20));
  ASSERT_FALSE(torn);
  EXPECT_EQ(torn.error().code, ErrorCode::io);
  fs.fail_next_rename();
  EXPECT_FALSE(store.write_periodic(sample_state(OptimizerKind::adamw, 8, 30)));
  EXPECT_FALSE(fs.exists("/out/ckpt-000000000020.ckpt"));
  EXPECT_FALSE(fs.exists("/out/ckpt-000000000020.ckpt.tmp"));
  EXPECT_FALSE(fs.exists("/out/ckpt-000000000030.ckpt"));
  auto loaded = store.load_newest_valid();
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->state.global_step, 10);
  EXPECT_TRUE(loaded->skipped.empty());
}

TEST(CheckpointStore, StepNamesParseStrictly) {
  EXPECT_EQ(CheckpointStore::step_of("ckpt-000000000123.ckpt"), 123);
  EXPECT_EQ(CheckpointStore::step_of("ckpt-000000000123.ckpt.tmp"), -1);
  EXPECT_EQ(CheckpointStore::step_of("ckpt-12.ckpt"), -1);
  EXPECT_EQ(CheckpointStore::step_of("ckpt-00000000012x.ckpt"), -1);
  EXPECT_EQ(CheckpointStore::periodic_name(7), "ckpt-000000000007.ckpt");
}

TEST(CheckpointStore, WorksOnTheRealDisk) {
  testing::TempDir dir("ckpt");
  ASSERT_FALSE(dir.path().empty());
  PosixFileSystem fs;
  CheckpointStore store(fs, dir.path(), 2);
  const TrainingState s = sample_state(OptimizerKind::adamw, 1000, 77);
  auto w = store.write_periodic(s);
  ASSERT_TRUE(w) << w.error().message;
  auto back = store.load(w->path);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(*back == s);
  ASSERT_TRUE(store.write_final(s));
  auto f = fs.read_file(dir.file("final.ckpt"));
  ASSERT_TRUE(f);
  EXPECT_EQ(*f, encode_checkpoint(s));
  auto names = fs.list_directory(dir.path());
  ASSERT_TRUE(names);
  EXPECT_EQ(names->size(), 2u);  // no temporary files left behind
  auto err = fs.read_file(dir.file("absent"));
  ASSERT_FALSE(err);
  EXPECT_EQ(err.error().code, ErrorCode::io);
}

}  // namespace
}  // namespace jobctl::train
