// The real data beside the repository (../shared/data: spot traces, SkyPilot price catalogs),
// read in place, never copied into the project. A test that needs a file of it starts with
//
//   JOBCTL_NEED_SHARED_DATA("spot-traces/preemption");
//
// which skips where the data is absent and fails under CI=true (tests/support/ci.h).
//
// Thread safety: reads the environment and the file system only.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/ci.h"

namespace jobctl::testing {

// <JOBCTL_SOURCE_DIR>/../shared/data, or `relative` under it.
inline std::filesystem::path shared_data(const std::string& relative = "") {
  const char* src = std::getenv("JOBCTL_SOURCE_DIR");
  const auto dir = std::filesystem::path(src != nullptr ? src : ".") / ".." / "shared" / "data";
  return relative.empty() ? dir : dir / relative;
}

}  // namespace jobctl::testing

// Skips (fails under CI=true) the current test when `relative` is not in the shared data.
#define JOBCTL_NEED_SHARED_DATA(relative)                                                          \
  do {                                                                                             \
    const auto jobctl_shared_path = ::jobctl::testing::shared_data(relative);                      \
    if (!std::filesystem::exists(jobctl_shared_path))                                              \
      JOBCTL_SKIP_UNLESS_CI("the shared data is not at " + jobctl_shared_path.string() +           \
                            " (the folder ../shared/data beside the repository)");                 \
  } while (0)
