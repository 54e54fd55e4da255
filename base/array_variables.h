// The environment variables through which a job array's case (a sweep's, docs/task-files.md)
// reaches its program: JOBCTL_ARRAY_INDEX, and JOBCTL_PARAM_<NAME> per parameter. The sweep's
// expansion (train/spec/job_sweep.h) refuses names that would collide here; the worker sets them.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace jobctl {

inline constexpr std::string_view kArrayIndexVariable = "JOBCTL_ARRAY_INDEX";

// JOBCTL_PARAM_ and the parameter's name upper-cased ("lr" -> JOBCTL_PARAM_LR).
inline std::string array_parameter_variable(std::string_view name) {
  std::string v = "JOBCTL_PARAM_";
  for (char c : name) v += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  return v;
}

}  // namespace jobctl
