// The omniscient deadline policy: it knows the whole spot trace in advance and plays the cheapest
// schedule that finishes by the deadline, under exactly the simulator's model (spot_simulator.h).
// No real policy can know the future, so its savings are the limit the others are measured
// against ("Can't Be Late", Wu et al., NSDI 2024, measures its policies against such an optimum).
//
// How it plans: dynamic programming over (trace tick, what runs — nothing, spot or on-demand —
// and progress). A changeover is taken whole: once started it runs to its end. Aborting one, or
// starting spot that is reclaimed before its changeover ends, is billed and makes no progress, so
// it is never cheaper than waiting those ticks (the brute-force test checks this claim). Between
// ticks a job is then either idle or running with no changeover left, and its progress is a*g + b*r
// (g: the tick; r: the work done in a changeover's last tick, L*g - d for a changeover of d spread
// over L ticks). Progress is kept on a grid of gcd(g, r), in integer milliseconds so the grid is
// exact, and only where the deadline can still be met and the time elapsed allows it: from
// (deadline - compute) / grid cells per tick, not compute / grid.
//
// Cost: O(ticks to the deadline x (deadline - compute) / grid) time and one byte per cell for the
// plan. plan_optimal refuses (limit_exceeded, field changeover_hours) when that exceeds
// kMaxOptimalCells: a changeover that is not a round multiple of a coarse grid against the tick
// makes the grid fine.
//
// Owned GPUs (a local-availability trace) are not part of the plan: spot and on-demand only.
//
// Thread safety: plan_optimal is a pure function. An OptimalPolicy is one job's: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "scheduler/deadline_policy.h"
#include "scheduler/spot_simulator.h"
#include "scheduler/spot_trace.h"

namespace jobctl::scheduler {

inline constexpr int64_t kMaxOptimalCells = 800'000'000;

struct OptimalPlan {
  double cost_usd = 0;                // what the plan costs under the simulator's billing
  double finish_hours = 0;            // when it finishes, from the job's start
  std::vector<Capacity> decisions;    // per tick from the job's start: what to run on
  std::vector<size_t> zones;          // and in which zone (the checkpoint's for on-demand)
  int64_t cells = 0;                  // states the planner stored (its memory, in bytes)
};

// The cheapest plan that meets the deadline. Errors: the simulator's for the config
// (invalid_argument naming the field), limit_exceeded (changeover_hours) when the state space
// is larger than kMaxOptimalCells.
[[nodiscard]] Expected<OptimalPlan> plan_optimal(const SpotTrace& spot, const SimulationConfig& config);
// The same over several zones of a region, under simulate_zones()'s model (moves pay
// config.move_hours): the states are per zone, so it costs zones x plan_optimal's. At most 15 zones.
[[nodiscard]] Expected<OptimalPlan> plan_optimal_zones(std::span<const SpotTrace> zones, const SimulationConfig& config);

// Plays a plan tick by tick. It is exempt from DeadlinePolicy's last-resort guard: the guard
// assumes the worst of a future that this policy knows.
class OptimalPolicy : public DeadlinePolicy {
 public:
  OptimalPolicy(OptimalPlan plan, double tick_hours) : plan_(std::move(plan)), tick_hours_(tick_hours) {}
  std::string_view name() const override { return "optimal"; }
  const OptimalPlan& plan() const { return plan_; }

 protected:
  Capacity choose(const ProgressState& s) override;
  bool guarded() const override { return false; }

 private:
  OptimalPlan plan_;
  double tick_hours_;
};

// plan_optimal, wrapped as a policy for simulate() with the same trace and config.
[[nodiscard]] Expected<std::unique_ptr<OptimalPolicy>> make_optimal_policy(const SpotTrace& spot,
                                                                          const SimulationConfig& config);
[[nodiscard]] Expected<std::unique_ptr<OptimalPolicy>> make_optimal_zones_policy(std::span<const SpotTrace> zones,
                                                                                const SimulationConfig& config);

}  // namespace jobctl::scheduler
