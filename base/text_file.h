// Reading a whole (small) file into memory: configuration, catalogs, traces, job specs. Only the
// I/O edges use it (daemon/, cloud/, cli/, worker/); cost/ and scheduler/ never read files.
//
// Thread safety: pure function of the file system.
#pragma once

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>

#include "base/expected.h"

namespace jobctl {

// The file's bytes. Errors name `field` (the option or key the path came from): not_found when it
// cannot be opened, io when reading it fails.
inline Expected<std::string> read_text_file(const std::string& path, std::string_view field) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return make_error(ErrorCode::not_found, "cannot read " + path + ": " + std::strerror(errno), std::string(field));
  // Sized read (std::istreambuf_iterator trips GCC 12's -Wnull-dereference when inlined).
  std::string s;
  in.seekg(0, std::ios::end);
  const std::streamoff n = in.tellg();
  if (n > 0) {
    s.resize(static_cast<size_t>(n));
    in.seekg(0, std::ios::beg);
    in.read(s.data(), n);
    s.resize(static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return make_error(ErrorCode::io, "error reading " + path, std::string(field));
  return s;
}

}  // namespace jobctl
