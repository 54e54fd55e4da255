// Tests that cannot run on this machine (the data beside the repository is absent, Chromium is not
// installed) skip, saying why, so that a developer's partial setup still runs the rest. Under
// CI=true the same is a failure: CI installs everything (scripts/setup.sh --browser) and has the
// data, so a skip there would hide a broken setup behind a green run.
//
//   if (!have_chromium) JOBCTL_SKIP_UNLESS_CI("Chromium not found: run scripts/setup.sh --browser");
//
// (A test that needs hardware CI does not have, a GPU, skips with GTEST_SKIP() everywhere.)
//
// Thread safety: reads the environment only.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace jobctl::testing {

// CI=true (or 1), as CI services set it.
inline bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::string_view(ci) == "true" || std::string_view(ci) == "1");
}

}  // namespace jobctl::testing

// Skips the current test saying `why` (a std::string), or fails it under CI=true. Like
// GTEST_SKIP() it returns from the function it is used in (a TEST body or SetUp()).
#define JOBCTL_SKIP_UNLESS_CI(why)                                                \
  do {                                                                            \
    const std::string jobctl_why = (why);                                         \
    if (::jobctl::testing::in_ci()) {                                             \
      GTEST_FAIL() << "CI=true, and this test cannot run here: " << jobctl_why;   \
    } else {                                                                      \
      GTEST_SKIP() << jobctl_why;                                                 \
    }                                                                             \
  } while (0)
