#include "train/data/idx_reader.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "train/data/huge_pages.h"

#ifdef JOBCTL_HAVE_ZLIB
#include <zlib.h>
#endif

namespace jobctl::train {

namespace {

Error data_error(const std::string& message) { return make_error(ErrorCode::data, message); }

uint32_t read_be32(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | static_cast<uint32_t>(p[3]);
}

// Reads [offset, offset + n) of a file (n = 0: to the end).
Expected<std::vector<uint8_t>> read_range(const std::string& path, size_t offset, size_t n) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return data_error("cannot open " + path);
  const auto size = static_cast<size_t>(in.tellg());
  if (offset > size) return std::vector<uint8_t>{};
  if (n == 0 || offset + n > size) n = size - offset;
  std::vector<uint8_t> bytes;
  resize_with_huge_pages(bytes, n);
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(n));
  if (!in) return data_error("cannot read " + path);
  return bytes;
}

Expected<size_t> file_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return data_error("cannot open " + path);
  return static_cast<size_t>(in.tellg());
}

#ifdef JOBCTL_HAVE_ZLIB
// size_hint: the uncompressed size the gzip trailer states (mod 2^32), to read without regrowing.
Expected<std::vector<uint8_t>> read_gzip(const std::string& path, size_t size_hint) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return data_error("cannot open " + path);
  gzbuffer(f, 1 << 17);
  std::vector<uint8_t> out;
  resize_with_huge_pages(out, size_hint);
  size_t used = 0;
  for (;;) {
    if (out.size() - used < (1 << 20)) out.resize(std::max(out.size() * 2, used + (size_t{1} << 20)));
    const int n = gzread(f, out.data() + used, static_cast<unsigned>(std::min<size_t>(out.size() - used, 1u << 30)));
    if (n < 0) {
      int errnum = 0;
      const std::string msg = gzerror(f, &errnum);
      gzclose(f);
      return data_error(path + ": corrupt gzip data (" + msg + ")");
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  out.resize(used);
  // gzread stops quietly at a truncated stream; gzclose_r reports it.
  const int rc = gzclose_r(f);
  if (rc != Z_OK) return data_error(path + ": truncated or corrupt gzip file");
  return out;
}
#endif

}  // namespace

Expected<std::vector<uint8_t>> read_maybe_gzipped(const std::string& path) {
  auto size = file_size(path);
  if (!size) return Unexpected{std::move(size).error()};
  auto magic = read_range(path, 0, 2);
  if (!magic) return magic;
  const bool gzipped = magic->size() == 2 && (*magic)[0] == 0x1f && (*magic)[1] == 0x8b;
  if (!gzipped) return read_range(path, 0, 0);
#ifdef JOBCTL_HAVE_ZLIB
  size_t hint = 0;
  if (*size >= 18) {
    auto trailer = read_range(path, *size - 4, 4);  // ISIZE: the uncompressed size mod 2^32
    if (!trailer) return trailer;
    const auto& t = *trailer;
    hint = static_cast<size_t>(t[0]) | (static_cast<size_t>(t[1]) << 8) | (static_cast<size_t>(t[2]) << 16) |
           (static_cast<size_t>(t[3]) << 24);
  }
  // Trust the trailer only within deflate's maximum ratio (about 1032:1) and a sane bound; a
  // corrupt trailer must not make us allocate gigabytes up front.
  const size_t bound = std::min<size_t>(*size * 1032, size_t{256} << 20);
  return read_gzip(path, std::min(hint, bound) + 1);
#else
  return data_error(path + " is gzipped, but this build has no zlib: decompress it (gunzip) first");
#endif
}

Expected<IdxArray> parse_idx(std::span<const uint8_t> bytes, const std::string& what) {
  if (bytes.size() < 4) return data_error(what + ": too short for an IDX header");
  if (bytes[0] != 0 || bytes[1] != 0) return data_error(what + ": not an IDX file (bad magic)");
  if (bytes[2] != 0x08) return data_error(what + ": IDX element type must be unsigned byte (0x08)");
  const size_t ndims = bytes[3];
  if (ndims < 1 || ndims > 4) return data_error(what + ": IDX must have 1 to 4 dimensions");
  if (bytes.size() < 4 + 4 * ndims) return data_error(what + ": truncated IDX header");
  IdxArray a;
  uint64_t total = 1;
  for (size_t i = 0; i < ndims; ++i) {
    const uint32_t d = read_be32(bytes.data() + 4 + 4 * i);
    a.dims.push_back(d);
    total *= d;
    if (total > (uint64_t{1} << 34)) return data_error(what + ": IDX dimensions are implausibly large");
  }
  const size_t header = 4 + 4 * ndims;
  if (bytes.size() - header != total)
    return data_error(what + ": IDX data has " + std::to_string(bytes.size() - header) + " bytes, the header says " +
                      std::to_string(total));
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return a;
}

Expected<IdxArray> read_idx_file(const std::string& path) {
  auto bytes = read_maybe_gzipped(path);
  if (!bytes) return Unexpected{std::move(bytes).error()};
  return parse_idx(*bytes, path);
}

}  // namespace jobctl::train
