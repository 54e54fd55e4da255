// The trace-driven simulator: runs one job under a deadline policy against a real spot trace, on a
// simulated clock (pure time stepping, one step per trace tick), with the very policy objects the
// daemon uses.
//
// Model (the one of "Can't Be Late", Wu et al., NSDI 2024): the job needs C0 hours of compute by
// R0 hours after it starts. At each tick the policy sees the state and picks spot, on-demand, an
// owned GPU (when a local-availability trace is given) or nothing. Starting a new instance costs
// the changeover delay d — billed, but no progress — and so does resuming after a spot instance is
// reclaimed. A reclaimed instance keeps the progress made (the cloud's notice gives time for a
// checkpoint; d covers restart and lost work). Spot is reclaimed when the trace says 0 at a tick;
// ticks past the end of the trace count as no spot. Billing is per second of use; the last tick
// is billed only up to the moment the job finishes.
//
// Several zones of a region: simulate_zones.
//
// The baseline is all on-demand: (C0 + d) * on-demand price; savings = 1 - cost / baseline.
//
// Thread safety: pure function of its arguments (the policy object is reset and then mutated).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/expected.h"
#include "scheduler/deadline_policy.h"
#include "scheduler/spot_trace.h"

namespace jobctl::scheduler {

struct SimulationConfig {
  double compute_hours = 0;          // C0
  double deadline_hours = 0;         // R0, from the job's start
  double changeover_hours = 0;       // d
  double spot_usd_per_hour = 0;
  double on_demand_usd_per_hour = 0;
  double start_hours = 0;            // where in the trace the job starts
  bool spot_price_from_trace = false;  // use the trace's per-tick prices where it has them
  double local_usd_per_hour = 0;     // an owned GPU's hour (only with a local trace)
  // Several zones: moving the checkpoint to another zone adds this to the changeover (its size
  // over the transfer rate: checkpoint_transfer_hours).
  double move_hours = 0;
};

// The hours a checkpoint of `checkpoint_gb` (10^9 bytes) takes at `gbit_per_s` (10^9 bits/s).
double checkpoint_transfer_hours(double checkpoint_gb, double gbit_per_s);

struct SimulationSegment {
  double start_hours = 0;
  double end_hours = 0;
  Capacity capacity = Capacity::none;
  size_t zone = 0;  // of the zones simulated; the checkpoint's zone while idle or on-demand
};

struct SimulationResult {
  std::string policy;
  bool finished = false;
  bool deadline_met = false;
  double finish_hours = 0;           // when the job finished (or the simulation stopped)
  double cost_usd = 0;
  double on_demand_cost_usd = 0;     // the all-on-demand baseline
  double savings = 0;                // 1 - cost / baseline
  double spot_hours = 0;             // billed hours on each capacity (changeovers included)
  double on_demand_hours = 0;
  double local_hours = 0;
  double idle_hours = 0;             // waiting on nothing
  double changeover_hours = 0;       // billed hours that made no progress
  double spot_cost_usd = 0;
  double on_demand_spent_usd = 0;
  double local_cost_usd = 0;
  int64_t preemptions = 0;
  int64_t changeovers = 0;
  int64_t moves = 0;                 // changeovers that moved the checkpoint to another zone
  int64_t decisions = 0;
  double trace_hours_from_start = 0;
  bool trace_covers_deadline = false;
  std::vector<SimulationSegment> segments;
};

// Whether simulate() can run this config on this trace. Errors ("invalid_argument", naming the
// field): non-positive compute, deadline or on-demand
// price; negative changeover or spot price; a start outside the trace; a deadline shorter than
// compute + changeover (nothing could meet it).
[[nodiscard]] Status validate_simulation(const SpotTrace& spot, const SimulationConfig& config);

// Runs the job; errors: validate_simulation's.
[[nodiscard]] Expected<SimulationResult> simulate(const SpotTrace& spot, const SimulationConfig& config,
                                                  DeadlinePolicy& policy, const SpotTrace* local = nullptr);

// The same over several zones of one region, one trace each (the same tick; the start must lie in
// the first): spot runs in the zone the policy names; on-demand and a wait keep the checkpoint
// where it is; a start in another zone once there is progress pays move_hours on top of the
// changeover. The job starts with no checkpoint, in zone 0. One zone: simulate() exactly.
// Errors: validate_simulation's on the first zone; invalid_argument (field "trace") for no zones
// or zones of different ticks.
[[nodiscard]] Expected<SimulationResult> simulate_zones(std::span<const SpotTrace> zones, const SimulationConfig& config,
                                                        DeadlinePolicy& policy, const SpotTrace* local = nullptr);

}  // namespace jobctl::scheduler
