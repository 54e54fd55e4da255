// Uniform Progress (Wu et al., "Can't Be Late: Optimizing Spot Instance Savings under Deadlines",
// NSDI 2024), exactly as docs/architecture.md states it. With C0 the job's compute, R0 its deadline and d the
// changeover delay, expected_progress(t) = t * C0 / R0:
//   1. safety net: once remaining time < remaining compute + 2d, on-demand for good;
//   2. hysteresis: on on-demand, stay until progress is ahead of expected_progress(t + 2d);
//   3. spot whenever it is available (even when behind the line);
//   4. behind the line (progress < expected_progress(t)) and no spot: on-demand;
//   5. otherwise wait.
//
// Thread safety: see deadline_policy.h.
#pragma once

#include "scheduler/deadline_policy.h"

namespace jobctl::scheduler {

class UniformProgressPolicy final : public DeadlinePolicy {
 public:
  std::string_view name() const override { return "up"; }

 protected:
  Capacity choose(const ProgressState& s) override;
};

}  // namespace jobctl::scheduler
