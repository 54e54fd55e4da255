// Deadline policies for spot: while a job runs, what should it run on next — spot, on-demand, an
// owned GPU, or nothing (wait) — so that it finishes by its deadline at the least cost?
//
// One interface for the daemon and the simulator alike: decide() sees the job's progress and the
// market now and returns what to run on until it is asked again. The daemon asks at every
// interruption and periodically (decision_period_hours apart); the trace-driven simulator asks at
// every trace tick — the same code either way.
//
// Policies (make_deadline_policy names):
//   "up"         Uniform Progress (Wu et al., NSDI 2024), as docs/architecture.md states it: run on spot while
//                it is available; when behind the line expected_progress(t) = t * C0 / R0 and no
//                spot is available, move to on-demand and stay until ahead of
//                expected_progress(t + 2d); a safety net moves to on-demand for good when the
//                remaining time < remaining compute + 2d.
//   "greedy"     spot whenever available, otherwise wait; the same safety net.
//   "on-demand"  always on-demand.
//   "local-first" an owned GPU whenever one is free, otherwise on-demand (never spot).
//   "optimal"    the omniscient bound (optimal_policy.h): knows the whole trace, so it is made for
//                one trace and job by make_optimal_policy, not by name here.
//   "lifetime"   a policy across the zones of a region (lifetime_policy.h): spot whenever some zone
//                has it, waiting rather than starting on-demand early, on-demand work bought in the
//                longest outages only when the spot still to come is not expected to finish the
//                job — per-zone window lifetimes, outages and the useful spot share learnt from
//                the past — the deadline guard and a cost guard.
//   "adaptive"   jobctl's policy (adaptive_progress.h): Uniform Progress with the line's slope
//                replaced by the spot availability observed so far, no return from on-demand to
//                spot until spot has stayed up for a while, and an exact per-period safety net.
//
// Every policy but the omniscient one is wrapped by the same last-resort guard: if running on
// anything but on-demand for one more decision period could make the deadline unreachable even by
// switching to on-demand afterwards (worst case: the spot instance is reclaimed at the end of the period), the job moves
// to on-demand for good. With the paper's figures (d = 0.3 h, periods of seconds) the 2d safety
// net of UP and greedy always fires first, so the guard changes nothing there; it matters when the
// daemon's period is longer than d.
//
// Thread safety: a policy object holds per-job state; one job, one object, one thread at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jobctl::scheduler {

enum class Capacity { none, spot, on_demand, local };
std::string_view to_string(Capacity c);

struct ProgressState {
  double elapsed_hours = 0;            // t, since the job started
  double deadline_hours = 0;           // R0, from the job's start
  double total_compute_hours = 0;      // C0
  double done_compute_hours = 0;       // progress so far (checkpointed work)
  double changeover_hours = 0;         // d: what starting a new instance costs before it is useful
  double decision_period_hours = 0;    // longest time until the policy is asked again
  Capacity current = Capacity::none;   // what the job runs on now (none after an interruption)
  double pending_changeover_hours = 0; // of the current instance's changeover, still to go
  bool spot_available = false;        // in `zone`
  bool local_available = false;
  // Several zones of one region (a multi-zone simulation): spot in each, the zone the job's
  // checkpoint is in (where it runs now, if it runs), and what moving the checkpoint to another
  // zone adds to a changeover (its transfer). Empty: one zone, `spot_available` is all there is.
  std::vector<bool> zone_spot_available;
  size_t zone = 0;
  double move_hours = 0;

  double remaining_time() const { return deadline_hours - elapsed_hours; }
  double remaining_compute() const { return total_compute_hours - done_compute_hours; }
  size_t zones() const { return zone_spot_available.empty() ? 1 : zone_spot_available.size(); }
  bool spot_in(size_t z) const { return zone_spot_available.empty() ? z == 0 && spot_available : zone_spot_available[z]; }
  // The changeover of starting in zone z: the move's transfer when the checkpoint has progress
  // and lies elsewhere.
  double changeover_in(size_t z) const {
    return changeover_hours + (z != zone && done_compute_hours > 0 ? move_hours : 0.0);
  }
};

// Whether the deadline stays reachable in the worst case if the job runs on `next` (none, spot or
// local; spot in `next_zone`) for one more decision period and must then start on-demand.
bool can_defer_on_demand(const ProgressState& s, Capacity next);
bool can_defer_on_demand(const ProgressState& s, Capacity next, size_t next_zone);

class DeadlinePolicy {
 public:
  virtual ~DeadlinePolicy() = default;
  virtual std::string_view name() const = 0;

  // Forgets all per-job state (a new job).
  void reset();
  // What to run on until the next decision. Never spot when spot is unavailable, never local when
  // no local GPU is free.
  Capacity decide(const ProgressState& s);
  // The zone of the last decision's spot (multi-zone; a policy that never moves stays in s.zone).
  size_t spot_zone() const { return spot_zone_; }
  // The last decision (none before the first).
  Capacity last_decision() const { return last_; }
  // True once the job has moved to on-demand for good.
  bool committed_to_on_demand() const { return committed_; }

 protected:
  virtual void on_reset() {}
  virtual Capacity choose(const ProgressState& s) = 0;
  // For policies with their own safety net.
  void commit_to_on_demand() { committed_ = true; }
  // Whether the last-resort guard applies: false only for a policy that knows the future.
  virtual bool guarded() const { return true; }
  // A policy that moves between zones names the zone of the spot it chose (default: s.zone).
  void choose_spot_zone(size_t z) { spot_zone_ = z; }

 private:
  Capacity decide_unrecorded(const ProgressState& s);

  bool committed_ = false;
  size_t spot_zone_ = 0;
  Capacity last_ = Capacity::none;
};

// nullptr for an unknown name.
std::unique_ptr<DeadlinePolicy> make_deadline_policy(std::string_view name);
std::span<const std::string_view> deadline_policy_names();

}  // namespace jobctl::scheduler
