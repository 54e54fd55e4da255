// The one rule for a relative path that names something inside a folder (a code bundle's
// entries, a job's output files): '/'-separated, not empty, not absolute, no NUL, no empty, "."
// or ".." component, at most 4096 bytes. A path that passes cannot leave the folder lexically
// (links are the caller's concern: it must not follow them).
//
// Thread safety: a pure function.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace jobctl {

// What is wrong with `path` ("an absolute path", ...); nullopt when it is a valid relative path.
inline std::optional<std::string> relative_path_problem(std::string_view path) {
  if (path.empty()) return "an empty path";
  if (path.size() > 4096) return "a path longer than 4096 bytes";
  if (path.front() == '/') return "an absolute path";
  if (path.find('\0') != std::string_view::npos) return "a path with a NUL byte";
  if (path.back() == '/') return "a path ending in '/'";
  size_t start = 0;
  for (;;) {
    const size_t slash = path.find('/', start);
    const std::string_view part = path.substr(start, slash == std::string_view::npos ? path.npos : slash - start);
    if (part.empty() || part == ".") return "an empty or '.' path component";
    if (part == "..") return "a '..' path component";
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return std::nullopt;
}

}  // namespace jobctl
