#include "train/checkpoint/checkpoint_scan.h"

#include <cstring>
#include <optional>

#include "base/crc32c.h"
#include "train/checkpoint/checkpoint_format.h"

namespace jobctl::train {

namespace {

constexpr size_t kHeaderBytes = 32;
constexpr size_t kSectionHeadBytes = 16;
constexpr uint32_t kMetaTag = 0x4154454D;  // "META", first character in the lowest byte
constexpr size_t kMetaBytes = 72;

uint32_t le32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
uint64_t le64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

}  // namespace

std::string checkpoint_tag_name(uint32_t t) {
  std::string s(4, ' ');
  for (int i = 0; i < 4; ++i) {
    const char c = static_cast<char>((t >> (8 * i)) & 0xFF);
    s[static_cast<size_t>(i)] = (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return s;
}

Error CheckpointScanner::fail(std::string message) {
  error_ = make_error(ErrorCode::corrupt_checkpoint, std::move(message));
  part_ = Part::end;
  return *error_;
}

Status CheckpointScanner::feed(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  file_crc_ = crc32c::extend(file_crc_, p, n);  // of every byte, framing errors or not
  if (error_) return *error_;
  while (n > 0) {
    if (part_ == Part::end || (part_ != Part::header && offset_ >= total_))
      return fail("trailing bytes: the file is longer than the " + std::to_string(total_) +
                  " bytes its header says, or goes on after the last section");
    if (part_ == Part::payload) {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(payload_left_, n));
      section_crc_ = crc32c::extend(section_crc_, p, take);
      if (tag_ == kMetaTag) meta_bytes_.append(p, take);
      payload_left_ -= take;
      offset_ += take;
      p += take;
      n -= take;
      if (payload_left_ == 0) {
        part_ = Part::section_crc;
        want_ = 4;
      }
      continue;
    }
    const size_t take = std::min(want_ - pending_.size(), n);
    pending_.append(p, take);
    offset_ += take;
    p += take;
    n -= take;
    if (pending_.size() == want_)
      if (auto st = complete_part(); !st) return st;
  }
  return {};
}

Status CheckpointScanner::complete_part() {
  const std::string bytes = std::move(pending_);
  pending_.clear();
  switch (part_) {
    case Part::header: {
      if (std::memcmp(bytes.data(), kCheckpointMagic, 8) != 0) return fail("not a jobctl checkpoint (bad magic)");
      if (crc32c::value(bytes.data(), 28) != le32(bytes.data() + 28)) return fail("header CRC mismatch");
      scan_.version = le32(bytes.data() + 8);
      if (scan_.version < 1 || scan_.version > kCheckpointVersion)
        return fail("unsupported checkpoint version " + std::to_string(scan_.version));
      sections_ = le32(bytes.data() + 12);
      total_ = le64(bytes.data() + 16);
      if (total_ < kHeaderBytes) return fail("the header's length is shorter than the header");
      part_ = sections_ == 0 ? Part::end : Part::section_head;
      want_ = kSectionHeadBytes;
      return {};
    }
    case Part::section_head: {
      tag_ = le32(bytes.data());
      const uint32_t flags = le32(bytes.data() + 4);
      payload_left_ = le64(bytes.data() + 8);
      if (flags != 0) return fail("section " + checkpoint_tag_name(tag_) + " has unknown flags");
      if (!tags_.insert(tag_).second) return fail("section " + checkpoint_tag_name(tag_) + " appears twice");
      if (payload_left_ > total_ || offset_ + payload_left_ + 4 > total_)
        return fail("section " + checkpoint_tag_name(tag_) + " runs past the end of the file");
      if (tag_ == kMetaTag && payload_left_ != kMetaBytes) return fail("section META is malformed");
      section_crc_ = crc32c::value(bytes.data(), bytes.size());
      meta_bytes_.clear();
      part_ = payload_left_ == 0 ? Part::section_crc : Part::payload;
      want_ = 4;
      return {};
    }
    case Part::section_crc: {
      if (le32(bytes.data()) != section_crc_) return fail("section " + checkpoint_tag_name(tag_) + " CRC mismatch");
      if (tag_ == kMetaTag) {
        const char* m = meta_bytes_.data();
        CheckpointMeta& meta = scan_.meta;
        meta.fingerprint = le64(m);
        meta.layout_hash = le64(m + 8);
        meta.global_step = static_cast<int64_t>(le64(m + 16));
        meta.epoch = static_cast<int64_t>(le64(m + 24));
        meta.cursor = static_cast<int64_t>(le64(m + 32));
        meta.steps_per_epoch = static_cast<int64_t>(le64(m + 40));
        meta.batch_size = static_cast<int64_t>(le64(m + 48));
        meta.train_samples = static_cast<int64_t>(le64(m + 56));
        meta.optimizer = le32(m + 64);
        if (meta.optimizer > 1) return fail("unknown optimizer code " + std::to_string(meta.optimizer));
        if (meta.global_step < 0 || meta.epoch < 0 || meta.cursor < 0) return fail("negative position");
        have_meta_ = true;
      }
      ++sections_seen_;
      part_ = sections_seen_ == sections_ ? Part::end : Part::section_head;
      want_ = kSectionHeadBytes;
      return {};
    }
    case Part::payload:
    case Part::end:
      break;
  }
  return fail("internal: the scanner is in no state");
}

Expected<CheckpointScan> CheckpointScanner::finish() {
  if (error_) return *error_;
  if (part_ != Part::end || offset_ < kHeaderBytes)
    return fail("truncated: " + std::to_string(offset_) + " bytes end inside " +
                (offset_ < kHeaderBytes ? std::string("the header") : "section " + std::to_string(sections_seen_)));
  if (offset_ != total_)
    return fail("truncated or padded: the header says " + std::to_string(total_) + " bytes, the file has " +
                std::to_string(offset_));
  if (!have_meta_) return fail("section META is missing");
  scan_.bytes = offset_;
  scan_.crc32c = file_crc_;
  return scan_;
}

}  // namespace jobctl::train
