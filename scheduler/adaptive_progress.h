// "adaptive": jobctl's deadline policy for spot, a variant of Uniform Progress that does better on
// the published traces while meeting every deadline (bench/RESULTS.md has the comparison).
//
// Write S for the slack (remaining time - remaining compute - the changeover still to go) and R
// for the remaining time. Uniform Progress goes to on-demand in an outage when it is behind the
// line t * C0/R0, which in slack terms is S < (1 - C0/R0) * R: it assumes spot will be available
// C0/R0 of the remaining time. This policy
//   1. replaces C0/R0 by an estimate of the availability a, learnt while the job runs (time-weighted
//      share of time spot was available, starting from the prior C0/R0 weighted as 6 hours of
//      observation, or from a prior the caller has from the zone's history): in an outage it goes
//      to on-demand only when S < (1 - a) * R + 2d — when waiting out the expected outages would
//      eat more slack than there is, keeping two changeovers in reserve;
//   2. leaves on-demand in an outage only with one changeover of hysteresis above that threshold;
//   3. leaves on-demand for spot only once spot has stayed available for 0.5 h (short flickers of
//      availability cost two changeovers and buy nothing) and only while the slack can pay for the
//      changeover and still keep the reserve — where UP stays on on-demand until ahead of the line;
//   4. uses the exact per-period safety net of DeadlinePolicy (no fixed 2d margin).
//
// Thread safety: see deadline_policy.h.
#pragma once

#include <optional>

#include "scheduler/deadline_policy.h"

namespace jobctl::scheduler {

struct AdaptiveOptions {
  double prior_weight_hours = 6.0;           // how much observation the prior counts as
  std::optional<double> prior_availability;  // default: C0 / R0 (UP's assumption)
  double reserve_changeovers = 2.0;          // slack kept in reserve, in units of d
  double release_hysteresis_changeovers = 1.0;
  double confirm_hours = 0.5;                // spot up this long before on-demand -> spot
};

class AdaptiveProgressPolicy final : public DeadlinePolicy {
 public:
  explicit AdaptiveProgressPolicy(AdaptiveOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "adaptive"; }

  // The availability estimate after the last decision (for logs and tests).
  double availability_estimate() const { return last_estimate_; }

 protected:
  void on_reset() override;
  Capacity choose(const ProgressState& s) override;

 private:
  void observe(const ProgressState& s);

  AdaptiveOptions options_;
  bool has_last_ = false;
  bool last_available_ = false;
  double last_t_ = 0;
  double observed_hours_ = 0;
  double available_hours_ = 0;
  double run_start_ = 0;
  double last_estimate_ = 0;
};

}  // namespace jobctl::scheduler
