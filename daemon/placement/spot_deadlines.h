// The spot deadline policy in the daemon (docs/cost-model.md, "Spot and deadlines at runtime"):
// one scheduler::DeadlinePolicy object per job with a deadline (placement.deadline_policy; the
// object keeps the job's state, e.g. "committed to on-demand"), asked
//   - by a placement pass, when a job with a deadline would go to spot, or would go on demand (or
//     is held to spot) only because no spot offer can be launched, at its first placement, after
//     every interruption and, while it waits for spot, at every pass (at_placement): on-demand
//     means spot is ruled out for that placement; wait (none) while no spot can be launched leaves
//     the job queued (placement outcome wait_spot);
//   - for every running spot job with a deadline, at every re-evaluation (check_running): when
//     the policy's safety net fires, a `deadline_policy` event records it once and the job is
//     moved to on-demand now (jobs::JobService::request_move: it checkpoints at its next
//     heartbeat and is placed on demand), not at its next interruption. Without a job service
//     to move through, its next placement (after an interruption) is on demand;
//   - for every running on-demand job with a deadline whose spec allows spot, at every
//     re-evaluation (check_running), with spot available when a spot offer that fits it can be
//     launched now: when the policy says spot (e.g. Uniform Progress ahead of its line, the job
//     having gone on demand while spot could not be launched), a `deadline_policy` event records
//     why and the job is moved to spot now; when it says wait (ahead of its line, no spot to
//     launch), the job is moved the same way and, held to spot, waits queued until spot can be
//     launched or the policy says on-demand. A policy that committed to on-demand for good (its
//     safety net fired) never says spot again, so a job its safety net moved stays on demand.
//
// Ownership and thread safety: borrows the store and the clock (both outlive it); every method
// is safe from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "base/clock.h"
#include "base/expected.h"
#include "base/mutex.h"
#include "daemon/jobs/job_service.h"
#include "daemon/store/store.h"
#include "scheduler/deadline_policy.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::placement {

struct SpotDeadlineSettings {
  std::string policy = "up";    // scheduler::make_deadline_policy name
  double changeover_hours = 0;  // placement.provision_hours: a new instance's time to be useful
  int decision_period_s = 10;   // placement.reevaluate_s: how often the policy is asked again
};

class SpotDeadlines {
 public:
  // Whether a spot offer that fits the rest of this running job can be launched now.
  using SpotLaunchable = std::function<bool(const store::JobRow& row, const train::JobSpec& spec, double done)>;

  // `mover`: the job service that moves running jobs and has their newest heartbeats (not owned,
  // outlives this); nullptr: none.
  SpotDeadlines(store::Store& store, const Clock& clock, SpotDeadlineSettings settings,
                jobs::JobService* mover = nullptr);

  // Where a deadline job stands for the policy: `total_hours` of compute of which the fraction
  // `done` is done, running on `current` (none: requeued, holding no capacity).
  scheduler::ProgressState progress(int64_t created_ms, int64_t now_ms, double deadline_hours, double total_hours,
                                    double done, scheduler::Capacity current) const;
  // The policy's answer for a job being placed that would run on spot (see the header). Job id 0
  // (a quote: no job yet) asks a fresh policy object and keeps nothing.
  scheduler::Capacity at_placement(int64_t job_id, const scheduler::ProgressState& state) JOBCTL_EXCLUDES(mu_);
  // Checks every running spot job with a deadline, and every running on-demand one that may run
  // on spot, when `spot_launchable` is given (see the header). Errors: the store's (a job whose
  // check failed is checked again next time).
  Status check_running(const SpotLaunchable& spot_launchable = {}) JOBCTL_EXCLUDES(mu_);
  const std::string& policy_name() const { return settings_.policy; }

 private:
  scheduler::DeadlinePolicy& policy_locked(int64_t job_id) JOBCTL_REQUIRES(mu_);

  store::Store& store_;
  const Clock& clock_;
  const SpotDeadlineSettings settings_;
  jobs::JobService* const mover_;
  Mutex mu_;
  std::map<int64_t, std::unique_ptr<scheduler::DeadlinePolicy>> policies_ JOBCTL_GUARDED_BY(mu_);  // by job
  std::set<int64_t> flagged_ JOBCTL_GUARDED_BY(mu_);  // jobs whose `deadline_policy` event is written
};

}  // namespace jobctl::daemon::placement
