// Placement passes over queued jobs (docs/cost-model.md, "Where a job runs"). A job is decided by
// scheduler::place over every local pool (registered local workers grouped by GPU model, with
// their expected queue wait), every configured Slurm partition (set_partition_source: owned GPUs
// behind Slurm's queue) and every usable offer on demand and on spot, for the work left (its
// last reported progress) and the time left to its deadline. A decision moves the job
// queued -> placed with a `placed` event and stores the placement document (docs/api.md, "The
// placement document"); PlacementMatcher then offers it only to a worker of the chosen kind. A job
// nothing can run stays queued with the document stored, and an `unplaceable` event when its
// reason changes. quote() decides the same way for a spec, storing nothing.
//
// Which jobs a pass decides follows what changed:
//   - request(job): the job entered the queue unplaced (submit, requeue, unplaced);
//   - capacity_changed(): a worker registered or came back, so jobs nothing could run may now fit:
//     every queued job last found unplaceable is decided again;
//   - reevaluate_queue(): every queued job (the periodic pass), except those found unplaceable
//     under the same local pools and offers (the same inputs give the same answer). Such a job is
//     left out before its row is read: the pass reads the queue's ids (an index scan) and then
//     only the rows it decides, so an idle daemon's pass costs memory lookups per queued job, not
//     a store read each. Jobs waiting for spot (the deadline policy's answer moves with the
//     clock) and jobs whose decision failed are never recorded as unplaceable, so every pass
//     decides them again.
// request() and capacity_changed() only record; run_requested() decides what they recorded.
// Every pass reads the workers and their leases once and commits its decisions a group at a time.
// The set of jobs a pass decides is computed in one place (jobs_to_decide): an index of the
// queue by what a job can run on would make it the jobs a change can affect, and the periodic
// pass bounded, without touching how a job is decided.
//
// Ownership and thread safety: borrows the store, the clock, the job service, the offer book, the
// calibration and the spot deadlines (all outlive it). Every method is safe from any thread.
// request() and capacity_changed() only record and return (they run on store commit hooks);
// passes run one at a time (pass_mu_); quote() does not wait for a pass. Lock order: pass_mu_,
// then cache_mu_; requests_mu_, observers_mu_ and source_mu_ are never held with another.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/expected.h"
#include "base/mutex.h"
#include "daemon/jobs/job_service.h"
#include "daemon/placement/command_runtime_history.h"
#include "daemon/placement/heartbeat_calibration.h"
#include "daemon/placement/offer_book.h"
#include "daemon/placement/placement_config.h"
#include "daemon/placement/spot_deadlines.h"
#include "scheduler/placement.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::placement {

// The scheduler's job for the work `row` has left (its last progress report), held to the options
// `held_to` names (local: owned workers only; on_demand, spot: that market only; anywhere: as
// the spec says). What every decision about a queued or a running job starts from.
scheduler::Job remaining_work(const store::JobRow& row, const train::JobSpec& spec, jobs::MoveTarget held_to);

// Whether a spot offer that fits `job` (held to spot) can be launched now: a cloud provider is
// configured and the offer was not set aside after a failed launch.
bool spot_launchable_now(scheduler::Job job, const scheduler::PlacementContext& ctx, int64_t now_ms);

class PlacementPasses {
 public:
  PlacementPasses(store::Store& store, const Clock& clock, jobs::JobService& jobs, const PlacementSettings& settings,
                  OfferBook& offers, HeartbeatCalibration& calibration, SpotDeadlines& deadlines);
  PlacementPasses(const PlacementPasses&) = delete;
  PlacementPasses& operator=(const PlacementPasses&) = delete;

  // Records that a job wants a decision. Returns true when nothing was recorded before (the
  // caller wakes whatever runs run_requested()).
  bool request(int64_t job_id) JOBCTL_EXCLUDES(requests_mu_);
  // Records that the local workers changed (one registered, or came back). Returns as request().
  bool capacity_changed() JOBCTL_EXCLUDES(requests_mu_);
  // Decides the recorded jobs (see the header). Errors: the first failure, naming its job; the
  // other jobs are decided all the same.
  Status run_requested() JOBCTL_EXCLUDES(requests_mu_, pass_mu_, cache_mu_, observers_mu_);
  // Decides every queued job (see the header). Errors: as run_requested().
  Status reevaluate_queue() JOBCTL_EXCLUDES(pass_mu_, cache_mu_, observers_mu_);
  // The decision placement would make for this spec now (the placement document), stored nowhere.
  // Errors: the spec's.
  Expected<nlohmann::json> quote(std::string_view spec_json) JOBCTL_EXCLUDES(cache_mu_);

  // A job finished: command jobs priced from the runs of their name see its run (the history's
  // cache is dropped).
  void job_finished() { command_runtimes_.forget(); }

  // What every decision is made against, for other rules that price options the same way (moves
  // for savings): the offers and calibration now (the offers' generation when asked), and the
  // local workers with what each holds.
  std::shared_ptr<const scheduler::PlacementContext> context(uint64_t* offers_generation) JOBCTL_EXCLUDES(cache_mu_);
  Expected<scheduler::LocalCapacity> local_capacity() JOBCTL_EXCLUDES(cache_mu_, source_mu_);

  // Where the Slurm partitions placement offers come from (daemon/slurm/slurm_partitions.h: the
  // last snapshot of the cluster, read elsewhere); none: no Slurm cluster. Each capacity read
  // calls it once, so it must be quick. May be set at any time.
  using PartitionSource = std::function<std::vector<scheduler::LocalCapacity::Partition>()>;
  void set_partition_source(PartitionSource source) JOBCTL_EXCLUDES(source_mu_) {
    MutexLock lock(source_mu_);
    partition_source_ = std::move(source);
  }

  // Observers, which may be set at any time; each must be quick and must not call back into
  // placement. Told how long each decision took (the placement latency metric); told every job
  // placed on a cloud offer or a Slurm partition, after its commit (on the writer thread), to wake
  // what launches it (the provisioner, the Slurm launcher).
  void set_decision_observer(std::function<void(double seconds)> observer) JOBCTL_EXCLUDES(observers_mu_) {
    MutexLock lock(observers_mu_);
    decision_observer_ = std::move(observer);
  }
  void set_launch_observer(std::function<void(int64_t job_id)> observer) JOBCTL_EXCLUDES(observers_mu_) {
    MutexLock lock(observers_mu_);
    launch_observer_ = std::move(observer);
  }

 private:
  struct Decision {
    nlohmann::json placement;  // the document to store
    bool placed = false;
    bool waiting_for_spot = false;  // held back by the spot deadline policy: queued, asked again every pass
  };
  // What a lease's placement chose, parsed once per (job, epoch): the estimate the local pool's
  // queue wait is computed from.
  struct LeaseChoice {
    int64_t epoch = 0;
    double estimated_hours = 1.0;  // unknown estimate: assume an hour
  };

  // The jobs a pass decides: `requested`, and the queued jobs last found unplaceable when the
  // capacity changed.
  std::vector<int64_t> jobs_to_decide(const std::set<int64_t>& requested, bool capacity_changed)
      JOBCTL_REQUIRES(pass_mu_);
  // One pass over these jobs (those still queued), one capacity read, decisions committed a group
  // at a time. skip_unchanged: leave out jobs found unplaceable under the same inputs.
  Status place(const std::vector<int64_t>& ids, bool skip_unchanged) JOBCTL_REQUIRES(pass_mu_)
      JOBCTL_EXCLUDES(cache_mu_, observers_mu_);
  Expected<Decision> decide(const store::JobRow& row, const train::JobSpec& spec, int64_t now_ms,
                            const scheduler::PlacementContext& ctx, const scheduler::LocalCapacity& local);

  store::Store& store_;
  const Clock& clock_;
  jobs::JobService& jobs_;
  const PlacementSettings& settings_;
  OfferBook& offers_;
  HeartbeatCalibration& calibration_;
  SpotDeadlines& deadlines_;
  CommandRuntimeHistory command_runtimes_{store_};

  Mutex observers_mu_;  // held while an observer runs; never held with another
  std::function<void(double)> decision_observer_ JOBCTL_GUARDED_BY(observers_mu_);
  std::function<void(int64_t)> launch_observer_ JOBCTL_GUARDED_BY(observers_mu_);

  Mutex source_mu_;  // never held with another
  PartitionSource partition_source_ JOBCTL_GUARDED_BY(source_mu_);

  Mutex requests_mu_;  // never held with another
  std::set<int64_t> requested_ JOBCTL_GUARDED_BY(requests_mu_);
  bool capacity_changed_ JOBCTL_GUARDED_BY(requests_mu_) = false;

  Mutex pass_mu_;  // one pass at a time (capacity is read, then decisions written); before cache_mu_
  // The inputs an unplaceable job's fate depends on (see place()), as last seen by a pass, and a
  // number that changes whenever they do: a job is recorded with the number, not a copy of them.
  std::string inputs_ JOBCTL_GUARDED_BY(pass_mu_);
  uint64_t inputs_generation_ JOBCTL_GUARDED_BY(pass_mu_) = 0;
  // Queued jobs a pass could not place -> the inputs generation it decided them under.
  std::map<int64_t, uint64_t> unplaceable_inputs_ JOBCTL_GUARDED_BY(pass_mu_);

  Mutex cache_mu_;  // held briefly: passes and quotes share these caches
  std::shared_ptr<const scheduler::PlacementContext> context_ JOBCTL_GUARDED_BY(cache_mu_);
  uint64_t context_offers_generation_ JOBCTL_GUARDED_BY(cache_mu_) = 0;
  uint64_t context_calibration_generation_ JOBCTL_GUARDED_BY(cache_mu_) = 0;
  // A worker's pool entry (nullopt: not a local worker): capabilities never change after a
  // worker registers, so they are parsed once.
  std::map<int64_t, std::optional<scheduler::Worker>> worker_pools_ JOBCTL_GUARDED_BY(cache_mu_);
  std::map<int64_t, LeaseChoice> lease_choices_ JOBCTL_GUARDED_BY(cache_mu_);  // by job; ended leases leave
  // The CPU machines local workers are (device key -> peak FP32 TFLOPS), for the context's
  // PlacementConfig::cpu_peak_tflops: filled as workers are read (local_capacity(), which every
  // caller runs before context()); a new machine rebuilds the context.
  std::map<std::string, double> cpu_peaks_ JOBCTL_GUARDED_BY(cache_mu_);
  bool cpu_peaks_changed_ JOBCTL_GUARDED_BY(cache_mu_) = false;
};

}  // namespace jobctl::daemon::placement
