// "lifetime": a deadline policy for spot across the zones of a region, learning from what it has
// observed of the market — the past only, never the future (a trace cut at the decision's tick
// gives the same decision: tests/scheduler/lifetime_policy_test.cpp).
//
// What it learns, at every decision, from the zones' spot availability seen so far:
//   - per zone, the lengths of its spot windows (a window: spot up without a break), and from them
//     the expected remaining life of a window of a given age: the mean of (length - age) over the
//     windows that outlived that age, with one prior window of prior_lifetime_hours;
//   - the availability a: the time-weighted share of the time spot was up in some zone, starting
//     from the prior C0/R0 worth prior_weight_hours of observation (Uniform Progress's assumption).
// How it decides, with S the slack (remaining time - remaining compute - changeover still to go),
// R the remaining time and d the changeover:
//   1. on spot and its zone is up: stay (a move costs a changeover and the checkpoint's transfer);
//   2. otherwise spot, in the up zone whose window has the longest expected remaining life after
//      its changeover (the move's transfer included when the zone is not the checkpoint's), when
//      that life is positive, the slack can pay the changeover and keep a reserve of
//      reserve_changeovers x d, and — coming from on-demand — the window has been up
//      confirm_hours (a short flicker costs two changeovers and buys nothing);
//   3. no spot worth starting: wait while S > (1 - a) R + reserve (the expected outages fit in
//      the slack), else on-demand, leaving it only with one changeover of hysteresis — as
//      "adaptive" does in one zone (adaptive_progress.h);
//   4. the safety nets: DeadlinePolicy's exact per-period deadline guard, and a cost guard: spot
//      only while what the job has spent, plus spot that makes no progress (a period; for a new
//      start, its whole changeover), plus on-demand to the end, stays within (1 + max_loss) x all
//      on-demand — so no run costs more than that (waiting and on-demand never add to the excess).
// Money is counted in on-demand hours, spot at spot_price_ratio of one (0.35: the guard holds for
// spot at up to 35% of on-demand, the paper's p3.2xlarge is 30%): the daemon's ProgressState
// carries no prices, and the simulator's must decide the same.
//
// Thread safety: see deadline_policy.h.
#pragma once

#include <vector>

#include "scheduler/deadline_policy.h"

namespace jobctl::scheduler {

struct LifetimeOptions {
  double prior_weight_hours = 6.0;    // how much observation the availability prior counts as
  double prior_lifetime_hours = 2.0;  // the one prior window per zone
  double reserve_changeovers = 2.0;   // slack kept in reserve, in units of d
  double release_hysteresis_changeovers = 1.0;
  double confirm_hours = 0.5;         // spot up this long before on-demand -> spot
  double max_loss = 0.009;            // of the all-on-demand cost: the cost guard
  double spot_price_ratio = 0.35;     // spot's price over on-demand's, as the policy counts it
};

class LifetimePolicy final : public DeadlinePolicy {
 public:
  explicit LifetimePolicy(LifetimeOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "lifetime"; }

  // After the last decision (for logs and tests).
  double availability_estimate() const { return last_availability_; }
  // The expected remaining life of zone z's window of age `age_hours`, from what was observed.
  double expected_remaining_life(size_t z, double age_hours) const;

 protected:
  void on_reset() override;
  Capacity choose(const ProgressState& s) override;

 private:
  struct Zone {
    std::vector<double> windows;  // lengths of the closed spot windows
    bool up = false;
    double window_start = 0;
  };
  void observe(const ProgressState& s, double spot_price, double on_demand_price);

  LifetimeOptions options_;
  std::vector<Zone> zones_;
  bool has_last_ = false;
  double now_ = 0;
  double observed_hours_ = 0;
  double any_up_hours_ = 0;  // with spot up in some zone
  bool any_up_ = false;
  double spent_ = 0;  // on-demand hours' worth when the prices are unknown
  double last_availability_ = 0;
};

}  // namespace jobctl::scheduler
