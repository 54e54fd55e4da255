// Output captured from scripts/slurm-cluster.sh's cluster (tests/slurm/data/), for the tests that
// read it without a cluster.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "base/text_file.h"

namespace jobctl::testing {

// The file's text; a failure (and "") when it cannot be read.
inline std::string captured_slurm_output(const std::string& name) {
  const char* src = std::getenv("JOBCTL_SOURCE_DIR");
  auto text = read_text_file(std::string(src ? src : ".") + "/tests/slurm/data/" + name, name);
  EXPECT_TRUE(text) << text.error().message;
  return text ? *text : std::string();
}

}  // namespace jobctl::testing
