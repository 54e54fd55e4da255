// The command line of jobctl-train (docs/train-cli.md).
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/expected.h"

namespace jobctl::train {

struct CliOptions {
  std::string spec_path;
  std::string out_dir;
  std::string resume;        // empty: fresh start; "auto"; or a checkpoint path
  std::string device = "auto";
  std::string data_dir;      // empty: the spec's or the default folder
  int threads = 0;           // 0: all cores
  int log_every = 1;
  int64_t max_steps = 0;     // 0: no limit
  bool help = false;
  bool measure_cpu = false;  // --measure-cpu: print one core's GEMM throughput and exit (no spec)
};

std::string usage_text();

// Errors have code "usage" and a message naming the flag.
Expected<CliOptions> parse_cli(const std::vector<std::string>& args);

}  // namespace jobctl::train
