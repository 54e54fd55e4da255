// Code bundles: a folder packed into one checksummed file, so that a command job's code travels
// with the job (jobctl submit --workdir DIR) and is unpacked into its working directory on the
// worker. The format is jobctl's own, fixed-width and little-endian (docs/job-protocol.md, "Code
// bundles"):
//
//   header, 40 bytes: magic "JCBUNDL1" | u64 payload bytes | u64 unpacked bytes | u32 entries |
//                     u32 CRC32C of the payload | u64 reserved (0)
//   payload: a zlib stream of the entries, each
//     u8 type ('d' folder, 'f' file, 'l' symbolic link) | u8 mode (1: executable) | u16 path bytes |
//     u32 reserved (0) | u64 data bytes | path (relative, '/'-separated) | data (file bytes, or
//     the link's target)
//   "unpacked bytes" is the sum of the entries' encoded sizes (16 + path + data each).
//
// Unpacking refuses, with a clear error and before writing anything it refuses: a bad magic,
// checksum or size; absolute paths, "." / ".." / empty components; entries under a link; links
// whose target is absolute or leaves the bundle; any other entry type (device files, FIFOs,
// sockets); an entry that already exists; and decompression bombs (more unpacked bytes than the
// limit, or than the header announced). Packing leaves out every `.git` folder and refuses what
// unpacking would refuse (links out of the folder, special files) and folders over the limit.
//
// Thread safety: pure functions over the file system.
#pragma once

#include <cstdint>
#include <string>

#include "base/expected.h"

namespace jobctl::bundle {

inline constexpr uint64_t kDefaultMaxPackedInput = uint64_t{100} << 20;   // files packed: 100 MiB
inline constexpr uint64_t kDefaultMaxUnpacked = uint64_t{512} << 20;      // unpacked: 512 MiB

struct BundleStats {
  uint64_t files = 0;
  uint64_t folders = 0;
  uint64_t links = 0;
  uint64_t file_bytes = 0;   // the files' contents
  uint64_t bundle_bytes = 0; // the bundle itself
};

// Packs `dir` into the bytes of a bundle. Errors (invalid_argument, field "workdir"): not a
// folder, more than `max_input_bytes` of files, a link out of the folder, a special file.
Expected<std::string> pack_directory(const std::string& dir, uint64_t max_input_bytes = kDefaultMaxPackedInput,
                                     BundleStats* stats = nullptr);

// Unpacks `bundle` into `dest` (created if absent; entries must not exist yet). Errors
// (invalid_argument, field "bundle", the message naming the entry and the reason; io when the
// disk fails). On an error, what was written so far stays: the caller discards `dest`.
Expected<BundleStats> unpack_bundle(const std::string& bundle, const std::string& dest,
                                    uint64_t max_unpacked_bytes = kDefaultMaxUnpacked);

}  // namespace jobctl::bundle
