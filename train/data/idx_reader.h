// The IDX file format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/):
//   magic: two zero bytes, a type byte (0x08 = unsigned byte), the number of dimensions;
//   each dimension as a big-endian uint32; then the data, row-major.
// Files may be gzipped (detected by their first two bytes, 1f 8b); reading those needs a build
// with zlib (JOBCTL_HAVE_ZLIB).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/expected.h"

namespace jobctl::train {

struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;  // product(dims) bytes
};

// Parses the bytes of an (already decompressed) IDX file of unsigned bytes. `what` names the
// source in error messages.
Expected<IdxArray> parse_idx(std::span<const uint8_t> bytes, const std::string& what);

// Reads and parses `path`, decompressing it when it is gzipped.
Expected<IdxArray> read_idx_file(const std::string& path);

// The whole content of a file, decompressed when gzipped. Errors have code "data".
Expected<std::vector<uint8_t>> read_maybe_gzipped(const std::string& path);

}  // namespace jobctl::train
