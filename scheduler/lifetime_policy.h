// "lifetime": a deadline policy for spot across the zones of a region, learning from what it has
// observed of the market — the past only, never the future (a trace cut at the decision's tick
// gives the same decision: tests/scheduler/lifetime_policy_test.cpp).
//
// The idea (the omniscient optimum's schedules show it): spot whenever some zone has it; waiting
// costs nothing but slack, so never start on-demand early; on-demand work is bought only when the
// spot still to come is not expected to finish the job, and then in the longest outages (the
// longer an outage has lasted, the longer it tends to last) rather than in one block at the end,
// which would forfeit the spot windows of the job's last part.
//
// What it learns, at every decision, from the zones' spot availability seen so far:
//   - per zone, the lengths of its spot windows (a window: spot up without a break), and from them
//     the expected remaining life of a window of a given age: the mean of (length - age) over the
//     windows that outlived that age, with one prior window of prior_lifetime_hours;
//   - the outages (no zone up): their lengths, the same way (one prior of prior_outage_hours);
//   - the useful share u: the work per hour a job on spot whenever some zone was up would have made
//     (a follower: it stays in its zone while it is up, else starts in the first zone up, paying a
//     changeover, and the move's transfer for another zone), from the prior C0/R0 worth
//     prior_weight_hours of observation (Uniform Progress's assumption).
// How it decides, with S the slack (remaining time - remaining compute - changeover still to go),
// R the remaining time, c the remaining compute and d the changeover:
//   1. on spot and its zone is up: stay (never a wait: stopping a running spot job gains nothing,
//      and the daemon leaves spot only for on-demand), unless the cost guard forbids another period;
//   2. otherwise spot, in the up zone whose window has the longest expected remaining life after
//      its changeover (the move's transfer included when the zone is not the checkpoint's), when
//      that life is positive; from on-demand only when, besides, the window's expected saving pays
//      its changeover and the one back to on-demand, the slack keeps a changeover back, and the
//      window has been up confirm_changeovers x d — or, when the slack cannot pay a return
//      (2 d) for each window the remaining time is expected to bring, as long as the longest
//      windows seen, the share of them that the slack can pay for;
//   3. no spot worth starting — an outage: the on-demand work needed is N = c - u R. Bridge the
//      outage on demand when N > 0 and N >= k R b(a): b(a), the share of the time that bridging
//      every outage from its age a on would have bridged so far (the current outage included,
//      from an exponential prior), and k the share of windows the slack can pay a return for (at
//      most 1: a tight slack bridges sooner, since waiting spends what returns need). Also bridge
//      when waiting would bring the slack below idle_floor_changeovers x d — waiting to the
//      deadline guard ends on on-demand for good. Otherwise wait. On demand, stay while N > 0 or
//      the slack is that low (stopping would only start it again);
//   4. the safety nets: DeadlinePolicy's exact per-period deadline guard, and a cost guard: spot
//      only while what the job has spent, plus the worst of the next period (a new start: its
//      whole changeover without progress; a running instance: a period billed, and what it makes
//      kept, as a reclaim keeps it), plus on-demand to the end, stays within (1 + max_loss) x all
//      on-demand, and a bridge only while it leaves money for one return to spot — so no run
//      costs more than that (waiting and on-demand never add to the excess). A start must also be
//      likely to outlive its changeover: among the zone's windows of its age (one prior window
//      that did), a share at least that of the allowance already spent — flickers must not spend
//      it all, or spot is out of reach for good — and at least start_survival x k.
// Money is counted in on-demand hours, spot at spot_price_ratio of one (0.35: the guard holds for
// spot at up to 35% of on-demand, the paper's p3.2xlarge is 30%): the daemon's ProgressState
// carries no prices, and the simulator's must decide the same.
//
// Thread safety: see deadline_policy.h.
#pragma once

#include <vector>

#include "scheduler/deadline_policy.h"

namespace jobctl::scheduler {

// The values, and why (measured in bench/RESULTS.md, "Spot across zones"):
struct LifetimeOptions {
  // A day: windows and outages run for hours, so a few hours of them say little (6 h, 12 h: no better).
  double prior_weight_hours = 24.0;    // how much observation the useful-share prior counts as
  // Of the order of the real traces' means (windows 0.8-4.4 h, outages 0.5-12 h; 1 h, 4 h: no better).
  double prior_lifetime_hours = 2.0;   // the one prior spot window per zone
  double prior_outage_hours = 2.0;     // the one prior outage, and the prior's mean
  // A return from on-demand costs 2 d of slack: a window younger than that is mostly a flicker.
  double confirm_changeovers = 2.0;    // spot up this long (x d) before on-demand -> spot
  // The on-demand changeover, then one return to spot and back.
  double idle_floor_changeovers = 3.0; // never wait the slack below this (x d)
  // More likely than not to outlive its changeover, where the slack pays a return per window.
  double start_survival = 0.5;
  double max_loss = 0.009;             // of the all-on-demand cost: the cost guard (under the 1% aimed at)
  double spot_price_ratio = 0.35;      // spot's price over on-demand's, as the policy counts it
};

class LifetimePolicy final : public DeadlinePolicy {
 public:
  explicit LifetimePolicy(LifetimeOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "lifetime"; }

  // The expected remaining life of zone z's window of age `age_hours`, from what was observed.
  double expected_remaining_life(size_t z, double age_hours) const;
  // After the last decision: the useful share u, and the on-demand work N it says is needed.
  double useful_share() const { return last_useful_share_; }
  double on_demand_need_hours() const { return last_need_; }

 protected:
  void on_reset() override;
  Capacity choose(const ProgressState& s) override;

 private:
  struct Zone {
    std::vector<double> windows;  // lengths of the closed spot windows
    bool up = false;
    double window_start = 0;
  };
  // The share of zone z's windows of age `age` that lived `changeover` longer (one prior window
  // that did).
  double survival(size_t z, double age, double changeover) const;
  void observe(const ProgressState& s, double spot_price, double on_demand_price);

  LifetimeOptions options_;
  std::vector<Zone> zones_;
  bool has_last_ = false;
  double now_ = 0;
  double observed_hours_ = 0;
  std::vector<double> outages_;  // lengths of the closed outages (no zone up)
  bool any_up_ = false;
  double outage_start_ = 0;
  // The follower (see above).
  bool follower_on_ = false;
  size_t follower_zone_ = 0;
  double follower_pending_ = 0;
  double follower_useful_ = 0;
  double spent_ = 0;  // on-demand hours' worth
  double last_useful_share_ = 0;
  double last_need_ = 0;
};

}  // namespace jobctl::scheduler
