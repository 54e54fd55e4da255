#include "train/checkpoint/checkpoint_format.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>
#include <string>

#include "base/crc32c.h"
#include "train/checkpoint/checkpoint_scan.h"
#include "train/data/huge_pages.h"

namespace jobctl::train {

namespace {

constexpr size_t kHeaderBytes = 32;
constexpr size_t kSectionHeadBytes = 16;  // tag, flags, length

constexpr uint32_t tag(const char (&s)[5]) {
  return static_cast<uint32_t>(static_cast<uint8_t>(s[0])) | (static_cast<uint32_t>(static_cast<uint8_t>(s[1])) << 8) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[2])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[3])) << 24);
}
constexpr uint32_t kMeta = tag("META");
constexpr uint32_t kProgress = tag("PROG");
constexpr uint32_t kRng = tag("RNGS");
constexpr uint32_t kData = tag("DATA");
constexpr uint32_t kParams = tag("PARM");
constexpr uint32_t kMoment1 = tag("MOM1");
constexpr uint32_t kMoment2 = tag("MOM2");
constexpr uint32_t kAccumulation = tag("ACCU");
constexpr uint32_t kKernels = tag("KERN");

std::string tag_name(uint32_t t) { return checkpoint_tag_name(t); }

// ---- writing ------------------------------------------------------------------------------------

class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f32(float v) { u32(std::bit_cast<uint32_t>(v)); }
  void f64(double v) { u64(std::bit_cast<uint64_t>(v)); }

  // u64 count, then the elements (4 bytes each, little-endian).
  template <class T>
  void array32(const std::vector<T>& v) {
    static_assert(sizeof(T) == 4);
    u64(v.size());
    if constexpr (std::endian::native == std::endian::little) {
      const size_t at = out_.size();
      out_.resize(at + v.size() * 4);
      if (!v.empty()) std::memcpy(out_.data() + at, v.data(), v.size() * 4);
    } else {
      for (const T& x : v) u32(std::bit_cast<uint32_t>(x));
    }
  }

 private:
  std::vector<uint8_t>& out_;
};

template <class Fill>
void section(std::vector<uint8_t>& out, uint32_t t, Fill&& fill) {
  const size_t start = out.size();
  Writer w(out);
  w.u32(t);
  w.u32(0);  // flags
  w.u64(0);  // length, patched below
  const size_t payload_start = out.size();
  fill(w);
  const uint64_t len = out.size() - payload_start;
  for (int i = 0; i < 8; ++i) out[start + 8 + static_cast<size_t>(i)] = static_cast<uint8_t>(len >> (8 * i));
  w.u32(crc32c::value(out.data() + start, out.size() - start));
}

// ---- reading -------------------------------------------------------------------------------------

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  size_t remaining() const { return n_ - pos_; }
  bool u32(uint32_t& v) {
    if (remaining() < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p_[pos_ + static_cast<size_t>(i)]) << (8 * i);
    pos_ += 4;
    return true;
  }
  bool u64(uint64_t& v) {
    if (remaining() < 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p_[pos_ + static_cast<size_t>(i)]) << (8 * i);
    pos_ += 8;
    return true;
  }
  bool i64(int64_t& v) {
    uint64_t u;
    if (!u64(u)) return false;
    v = static_cast<int64_t>(u);
    return true;
  }
  bool f32(float& v) {
    uint32_t u;
    if (!u32(u)) return false;
    v = std::bit_cast<float>(u);
    return true;
  }
  bool f64(double& v) {
    uint64_t u;
    if (!u64(u)) return false;
    v = std::bit_cast<double>(u);
    return true;
  }
  bool skip(size_t n) {
    if (remaining() < n) return false;
    pos_ += n;
    return true;
  }
  template <class T>
  bool array32(std::vector<T>& v) {
    uint64_t count;
    if (!u64(count) || count > remaining() / 4) return false;
    v.resize(static_cast<size_t>(count));
    if constexpr (std::endian::native == std::endian::little) {
      if (count) std::memcpy(v.data(), p_ + pos_, static_cast<size_t>(count) * 4);
      pos_ += static_cast<size_t>(count) * 4;
    } else {
      for (auto& x : v) {
        uint32_t u;
        u32(u);
        x = std::bit_cast<T>(u);
      }
    }
    return true;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

Error corrupt(const std::string& message) { return make_error(ErrorCode::corrupt_checkpoint, message); }

}  // namespace

std::vector<uint8_t> encode_checkpoint(const TrainingState& s) {
  std::vector<uint8_t> out;
  const size_t expected = kHeaderBytes + 512 + (s.params.size() + s.moment1.size() + s.moment2.size() +
                                                s.permutation.size() + s.epoch_losses.size()) * 4;
  out.reserve(expected);
  advise_huge_pages(out.data(), expected);  // a large state is tens of thousands of fresh pages
  const bool adamw = s.optimizer == OptimizerKind::adamw;
  const bool accumulating = s.micro_step != 0;
  const bool named_kernels = !s.kernels.empty();
  const uint32_t sections = (adamw ? 7 : 6) + (accumulating ? 1 : 0) + (named_kernels ? 1 : 0);
  {
    Writer w(out);
    for (char c : kCheckpointMagic) out.push_back(static_cast<uint8_t>(c));
    w.u32(named_kernels  ? kCheckpointVersion
          : accumulating ? kCheckpointVersionWithAccumulation
                         : kCheckpointVersionWithoutAccumulation);
    w.u32(sections);
    w.u64(0);  // total length, patched below
    w.u32(0);  // reserved
    w.u32(0);  // header CRC, patched below
  }
  if (named_kernels) {
    section(out, kKernels, [&](Writer& w) {
      const size_t n = std::min(s.kernels.size(), kCheckpointKernelsMaxBytes);
      w.u32(static_cast<uint32_t>(n));
      out.insert(out.end(), s.kernels.begin(), s.kernels.begin() + static_cast<std::ptrdiff_t>(n));
    });
  }
  section(out, kMeta, [&](Writer& w) {
    w.u64(s.fingerprint);
    w.u64(s.layout_hash);
    w.i64(s.global_step);
    w.i64(s.epoch);
    w.i64(s.cursor);
    w.i64(s.steps_per_epoch);
    w.i64(s.batch_size);
    w.i64(s.train_samples);
    w.u32(adamw ? 1 : 0);
    w.u32(0);
  });
  section(out, kProgress, [&](Writer& w) {
    w.f32(s.last_loss);
    w.u32(s.has_eval ? 1 : 0);
    w.i64(s.eval_epoch);
    w.f64(s.train_loss);
    w.f64(s.test_loss);
    w.f64(s.test_accuracy);
    w.array32(s.epoch_losses);
  });
  section(out, kRng, [&](Writer& w) {
    w.u32(1);  // streams: the data shuffle
    w.u32(0);
    for (uint64_t word : s.shuffle_rng) w.u64(word);
  });
  section(out, kData, [&](Writer& w) { w.array32(s.permutation); });
  section(out, kParams, [&](Writer& w) { w.array32(s.params); });
  section(out, kMoment1, [&](Writer& w) { w.array32(s.moment1); });
  if (adamw) section(out, kMoment2, [&](Writer& w) { w.array32(s.moment2); });
  if (accumulating) {
    section(out, kAccumulation, [&](Writer& w) {
      w.i64(s.micro_step);
      w.array32(s.partial_grads);
      w.array32(s.partial_row_losses);
    });
  }

  const uint64_t total = out.size();
  for (int i = 0; i < 8; ++i) out[16 + static_cast<size_t>(i)] = static_cast<uint8_t>(total >> (8 * i));
  const uint32_t crc = crc32c::value(out.data(), 28);
  for (int i = 0; i < 4; ++i) out[28 + static_cast<size_t>(i)] = static_cast<uint8_t>(crc >> (8 * i));
  return out;
}

Expected<TrainingState> decode_checkpoint(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderBytes)
    return corrupt("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the header");
  if (std::memcmp(bytes.data(), kCheckpointMagic, 8) != 0) return corrupt("not a jobctl checkpoint (bad magic)");
  Reader head(bytes.data() + 8, kHeaderBytes - 8);
  uint32_t version = 0, count = 0, reserved = 0, header_crc = 0;
  uint64_t total = 0;
  head.u32(version);
  head.u32(count);
  head.u64(total);
  head.u32(reserved);
  head.u32(header_crc);
  if (crc32c::value(bytes.data(), 28) != header_crc) return corrupt("header CRC mismatch");
  if (version < kCheckpointVersionWithoutAccumulation || version > kCheckpointVersion)
    return corrupt("unsupported checkpoint version " + std::to_string(version) + " (this build reads " +
                   std::to_string(kCheckpointVersionWithoutAccumulation) + " to " +
                   std::to_string(kCheckpointVersion) + ")");
  if (total != bytes.size())
    return corrupt("truncated or padded: the header says " + std::to_string(total) + " bytes, the file has " +
                   std::to_string(bytes.size()));

  TrainingState s;
  std::set<uint32_t> seen;
  uint32_t optimizer_code = 0;
  size_t pos = kHeaderBytes;
  for (uint32_t i = 0; i < count; ++i) {
    if (bytes.size() - pos < kSectionHeadBytes + 4) return corrupt("truncated in section " + std::to_string(i));
    Reader sh(bytes.data() + pos, kSectionHeadBytes);
    uint32_t t = 0, flags = 0;
    uint64_t len = 0;
    sh.u32(t);
    sh.u32(flags);
    sh.u64(len);
    const size_t room = bytes.size() - pos - kSectionHeadBytes - 4;
    if (len > room) return corrupt("section " + tag_name(t) + " runs past the end of the file");
    const size_t body = pos + kSectionHeadBytes;
    const size_t end = body + static_cast<size_t>(len);
    Reader crc_reader(bytes.data() + end, 4);
    uint32_t stored_crc = 0;
    crc_reader.u32(stored_crc);
    if (crc32c::value(bytes.data() + pos, end - pos) != stored_crc)
      return corrupt("section " + tag_name(t) + " CRC mismatch");
    if (flags != 0) return corrupt("section " + tag_name(t) + " has unknown flags");
    if (!seen.insert(t).second) return corrupt("section " + tag_name(t) + " appears twice");

    Reader r(bytes.data() + body, static_cast<size_t>(len));
    bool ok = true;
    if (t == kMeta) {
      uint32_t pad = 0;
      ok = r.u64(s.fingerprint) && r.u64(s.layout_hash) && r.i64(s.global_step) && r.i64(s.epoch) &&
           r.i64(s.cursor) && r.i64(s.steps_per_epoch) && r.i64(s.batch_size) && r.i64(s.train_samples) &&
           r.u32(optimizer_code) && r.u32(pad);
      if (ok && optimizer_code > 1) return corrupt("unknown optimizer code " + std::to_string(optimizer_code));
      s.optimizer = optimizer_code == 1 ? OptimizerKind::adamw : OptimizerKind::sgd;
    } else if (t == kProgress) {
      uint32_t has_eval = 0;
      ok = r.f32(s.last_loss) && r.u32(has_eval) && r.i64(s.eval_epoch) && r.f64(s.train_loss) &&
           r.f64(s.test_loss) && r.f64(s.test_accuracy) && r.array32(s.epoch_losses);
      s.has_eval = has_eval != 0;
    } else if (t == kRng) {
      uint32_t streams = 0, pad = 0;
      ok = r.u32(streams) && r.u32(pad) && streams == 1;
      for (auto& word : s.shuffle_rng) ok = ok && r.u64(word);
    } else if (t == kData) {
      ok = r.array32(s.permutation);
    } else if (t == kParams) {
      ok = r.array32(s.params);
    } else if (t == kMoment1) {
      ok = r.array32(s.moment1);
    } else if (t == kMoment2) {
      ok = r.array32(s.moment2);
    } else if (t == kKernels && version >= kCheckpointVersion && i == 0) {
      uint32_t n = 0;
      ok = r.u32(n) && n > 0 && n <= kCheckpointKernelsMaxBytes && n == r.remaining();
      if (ok) s.kernels.assign(reinterpret_cast<const char*>(bytes.data() + body + 4), n);
      if (ok) ok = r.skip(n);
    } else if (t == kAccumulation && version >= kCheckpointVersionWithAccumulation) {
      ok = r.i64(s.micro_step) && r.array32(s.partial_grads) && r.array32(s.partial_row_losses) && s.micro_step > 0;
    } else {
      return corrupt("unknown section " + tag_name(t));
    }
    if (!ok || r.remaining() != 0) return corrupt("section " + tag_name(t) + " is malformed");
    pos = end + 4;
  }
  if (pos != bytes.size()) return corrupt("trailing bytes after the last section");
  for (uint32_t required : {kMeta, kProgress, kRng, kData, kParams, kMoment1})
    if (!seen.count(required)) return corrupt("section " + tag_name(required) + " is missing");
  const bool adamw = s.optimizer == OptimizerKind::adamw;
  if (adamw != (seen.count(kMoment2) == 1)) return corrupt("optimizer state does not match the optimizer");
  if (s.moment1.size() != s.params.size() || (adamw && s.moment2.size() != s.params.size()))
    return corrupt("optimizer state size does not match the parameter count");
  if (s.global_step < 0 || s.epoch < 0 || s.cursor < 0) return corrupt("negative position");
  if (version == kCheckpointVersionWithAccumulation && !seen.count(kAccumulation))
    return corrupt("section ACCU is missing (a version 2 checkpoint is inside an optimizer step)");
  if (version >= kCheckpointVersion && !seen.count(kKernels)) return corrupt("section KERN is missing");
  if (s.micro_step != 0 && s.partial_grads.size() != s.params.size())
    return corrupt("the partial gradient's size does not match the parameter count");
  return s;
}

}  // namespace jobctl::train
