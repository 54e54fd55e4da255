// Sweeps (job arrays, docs/task-files.md "Sweeps"): a spec that names parameters and their values
// under `sweep` stands for one job per case. This expands it: each case's spec is the spec without
// `sweep` and with `array` ({"index", "parameters"}, job_spec.h ArrayCase), which the worker turns
// into JOBCTL_ARRAY_INDEX and JOBCTL_PARAM_<NAME>. The daemon (POST /v1/arrays) and jobctl launch
// both expand with this, and each case is then validated by parse_job_spec.
//
//   "sweep": {"grid":  {"lr": [0.1, 0.01], "batch": [32, 64]}}   the product: 4 cases
//   "sweep": {"cases": [{"lr": 0.1}, {"lr": 0.01, "batch": 64}]}  the cases as listed
//
// A grid's cases vary its last parameter fastest, in the order the document gives them. Values
// are strings, numbers or booleans; the program receives them as text (a number as JSON writes it).
//
// Thread safety: pure functions over values.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"

namespace jobctl::train {

inline constexpr int kMaxArrayCases = 1000;
inline constexpr size_t kMaxSweepParameters = 32;
// The most bytes a sweep's case specs may come to together (each case is the whole spec, stored as
// a job of its own): what one array request may add to jobctld's database is bounded by it.
inline constexpr size_t kMaxSweepBytes = size_t{8} << 20;
inline constexpr std::string_view kSweepParameterNameRule =
    "a parameter name is letters, digits and '_' (at most 64), not starting with a digit";

// Whether `name` may name a parameter (kSweepParameterNameRule).
bool is_sweep_parameter_name(std::string_view name);

// The specs (JSON texts) of each case of the spec's `sweep`, in index order. Errors name the field
// ("sweep.grid.lr[2]", "sweep.cases[1]"); a spec without `sweep` is an error naming `sweep`; cases
// over kMaxSweepBytes together are "payload_too_large" naming `sweep`. The
// cases' specs are not validated here: parse_job_spec does that, one spec at a time.
[[nodiscard]] Expected<std::vector<std::string>> expand_sweep(std::string_view spec_json);

}  // namespace jobctl::train
