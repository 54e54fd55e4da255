// The repository as the repo tests see it: its root (JOBCTL_SOURCE_DIR, set by CTest) and its
// files, read from disk. Build trees (any folder holding a CMakeCache.txt, wherever
// JOBCTL_BUILD_DIR put it), hidden folders (.git, .jobctl) and node_modules are not the
// repository's own files and are left out.
//
// Thread safety: pure functions over the file system.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/text_file.h"

namespace jobctl::repo {

namespace fs = std::filesystem;

inline fs::path repo_root() {
  const char* src = std::getenv("JOBCTL_SOURCE_DIR");
  return fs::weakly_canonical(fs::path(src != nullptr ? src : "."));
}

// Paths relative to `root`, with '/' separators, sorted.
inline std::vector<std::string> repo_files(const fs::path& root) {
  std::vector<std::string> out;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied), end;
  for (; it != end; ++it) {
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    if (it->is_directory()) {
      if (name.starts_with(".") || name == "node_modules" || fs::exists(p / "CMakeCache.txt")) {
        it.disable_recursion_pending();
      }
      continue;
    }
    if (it->is_regular_file() && !name.starts_with(".")) {
      out.push_back(fs::relative(p, root).generic_string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline bool has_suffix(std::string_view s, std::initializer_list<std::string_view> suffixes) {
  return std::any_of(suffixes.begin(), suffixes.end(), [&](std::string_view x) { return s.ends_with(x); });
}

// C++ and CUDA sources and headers.
inline bool is_source(std::string_view path) {
  return has_suffix(path, {".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh"});
}

// The folder of a repository path, with a trailing '/' ("" for the root).
inline std::string folder_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string() : std::string(path.substr(0, slash + 1));
}

// The whole file, or "" when it cannot be read.
inline std::string read_repo_file(const fs::path& root, const std::string& path) {
  auto text = read_text_file((root / path).string(), path);
  return text ? *text : std::string();
}

}  // namespace jobctl::repo
