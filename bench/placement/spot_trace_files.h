// The spot traces the placement benchmarks read: every .json file below a folder, in name order,
// by default ../shared/data/spot-traces beside the source tree (JOBCTL_SOURCE_DIR).
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <vector>

namespace jobctl::bench {

inline std::filesystem::path default_spot_trace_dir() {
  const char* src = std::getenv("JOBCTL_SOURCE_DIR");
  return std::filesystem::path(src ? src : ".") / ".." / "shared" / "data" / "spot-traces";
}

// The trace files below `dir`, or nothing (with a message) when the folder is absent.
inline std::optional<std::vector<std::filesystem::path>> spot_trace_files(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir)) {
    std::fprintf(stderr, "no traces at %s\n", dir.c_str());
    return std::nullopt;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace jobctl::bench
