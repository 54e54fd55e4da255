// The real spot traces of the shared data (tests/support/shared_data.h), parsed: what the tests
// that replay them through the simulator or through the daemon read.
//
// Thread safety: reads the file system only.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "scheduler/spot_trace.h"
#include "tests/support/shared_data.h"

namespace jobctl::testing {

// The traces' folder: ../shared/data/spot-traces.
inline std::filesystem::path spot_traces_dir() { return shared_data("spot-traces"); }

// The trace at `path`; an empty trace (and a test failure) when it cannot be read or parsed.
inline scheduler::SpotTrace load_spot_trace(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  auto t = scheduler::parse_spot_trace(s.str());
  EXPECT_TRUE(t) << path << ": " << (t ? "" : t.error().message);
  return t ? *t : scheduler::SpotTrace{};
}

}  // namespace jobctl::testing
