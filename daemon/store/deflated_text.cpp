#include "daemon/store/deflated_text.h"

#include <zlib.h>

#include <cstdint>

namespace jobctl::daemon::store {

namespace {

constexpr size_t kHeader = 4;
// No stored text is near this; a header claiming more is damage, not a document.
constexpr uint32_t kMaxText = 64u << 20;

}  // namespace

Expected<DeflatedText> deflate_text(std::string_view text) {
  if (text.size() > kMaxText) return make_error(ErrorCode::invalid_argument, "text too long to store deflated");
  uLongf packed = compressBound(static_cast<uLong>(text.size()));
  std::string out(kHeader + packed, '\0');
  const auto n = static_cast<uint32_t>(text.size());
  for (size_t i = 0; i < kHeader; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  // Level 1: a decision is written once and read a few times; speed matters more than the last
  // few percent of size.
  if (compress2(reinterpret_cast<Bytef*>(out.data() + kHeader), &packed, reinterpret_cast<const Bytef*>(text.data()),
                static_cast<uLong>(text.size()), 1) != Z_OK)
    return make_error(ErrorCode::internal, "zlib could not deflate a document");
  out.resize(kHeader + packed);
  return DeflatedText{std::move(out)};
}

Expected<std::string> inflate_text(std::string_view stored) {
  if (stored.size() < kHeader) return make_error(ErrorCode::io, "a stored document is shorter than its header");
  uint32_t n = 0;
  for (size_t i = 0; i < kHeader; ++i) n |= static_cast<uint32_t>(static_cast<unsigned char>(stored[i])) << (8 * i);
  if (n > kMaxText) return make_error(ErrorCode::io, "a stored document claims an impossible length");
  std::string out(n, '\0');
  uLongf got = n;
  const int rc = uncompress(reinterpret_cast<Bytef*>(out.data()), &got,
                            reinterpret_cast<const Bytef*>(stored.data() + kHeader), static_cast<uLong>(stored.size() - kHeader));
  if (rc != Z_OK || got != n) return make_error(ErrorCode::io, "a stored document does not inflate to its length");
  return out;
}

}  // namespace jobctl::daemon::store
