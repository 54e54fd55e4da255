// The baselines Uniform Progress is compared with (deadline_policy.h):
//   GreedyPolicy      spot whenever available, otherwise wait; on-demand for good once remaining
//                     time < remaining compute + 2d (the same safety net as UP).
//   OnDemandPolicy    always on-demand: the cost every saving is measured against.
//   LocalFirstPolicy  an owned GPU whenever one is free, otherwise on-demand; never spot. It moves
//                     from on-demand to a freed local GPU only when the changeover cannot endanger
//                     the deadline.
//
// Thread safety: see deadline_policy.h.
#pragma once

#include "scheduler/deadline_policy.h"

namespace jobctl::scheduler {

class GreedyPolicy final : public DeadlinePolicy {
 public:
  std::string_view name() const override { return "greedy"; }

 protected:
  Capacity choose(const ProgressState& s) override;
};

class OnDemandPolicy final : public DeadlinePolicy {
 public:
  std::string_view name() const override { return "on-demand"; }

 protected:
  Capacity choose(const ProgressState&) override { return Capacity::on_demand; }
};

class LocalFirstPolicy final : public DeadlinePolicy {
 public:
  std::string_view name() const override { return "local-first"; }

 protected:
  Capacity choose(const ProgressState& s) override;
};

}  // namespace jobctl::scheduler
