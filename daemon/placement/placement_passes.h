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
// Which jobs a pass decides follows what changed. The queued jobs nothing can run are indexed by
// what they need (scheduler::rejection_key: mode, spot, GPU request, GPUs, memory, price cap, …):
// jobs with one key are rejected by the same candidates, so while the inputs of that answer — the
// local pools, the Slurm partitions and the usable offers, summed up as an inputs generation —
// stay the same, the answer stands for every job of the key, and when they change one decision
// per key tells whether any of its jobs can now run:
//   - request(job): the job entered the queue unplaced (submit, requeue, unplaced): decided;
//   - capacity_changed(): a worker registered or came back, or reevaluate_queue() (the periodic
//     pass, which also sees offers set aside or back): the indexed jobs are walked in id order;
//     the first job of a key not yet tried under the current inputs is decided, and if it stays
//     unplaceable the rest of its key are left out (a worker that fits none of 100,000 waiting
//     jobs of one kind costs one decision, not 100,000); if it is placed, the others of its key
//     are decided in turn. A job left out is left out before its row is read: an idle pass costs
//     a memory lookup per queued job. Jobs waiting for spot (the deadline policy's answer moves
//     with the clock) and jobs whose decision failed are never indexed, so every pass decides
//     them again.
// The key of an unplaceable decision is stored beside the job's placement document, and
// load_queue() rebuilds the index from it at start: a restart decides one job per key, not the
// queue. An indexed job's document is the one of its own last decision: a change that places no
// job of its key does not rewrite it (its `decided_ms` says when it was taken).
// A job decided before placement has seen the fleet gets no `unplaceable` event yet: while no
// local worker has registered and no Slurm partition is known, during the first
// placement.reevaluate_s after start (the first periodic pass after start's), an unplaceable
// decision stores its document (which says why) but holds its event, so that a job submitted
// just before the first worker registers (scripts/start.sh's first job) is placed once the
// registration's pass sees the worker, with no `unplaceable` before its `placed`. Whether the
// fleet is seen is one of the inputs: the first pass after the grace decides one held job per key
// again, and where that one stays unplaceable the event of every held job of its key is written
// then, once, from its stored document (a queue of 100,000 jobs decided in the grace is not
// decided again).
// stop(): a pass in progress stops before its next job (jobctld's SIGTERM); the jobs left are
// decided by the next start.
// request() and capacity_changed() only record; run_requested() decides what they recorded.
// Every pass reads the workers and their leases once and commits its decisions a group at a time.
//
// Ownership and thread safety: borrows the store, the clock, the job service, the offer book, the
// calibration and the spot deadlines (all outlive it). Every method is safe from any thread.
// request() and capacity_changed() only record and return (they run on store commit hooks);
// passes run one at a time (pass_mu_); quote() does not wait for a pass. Lock order: pass_mu_,
// then cache_mu_; requests_mu_, observers_mu_ and source_mu_ are never held with another.
#pragma once

#include <atomic>
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

// The scheduler's job for the work `row` has left (`done`: the fraction done, done_fraction of its
// last progress report), held to the options `held_to` names (local: owned workers only;
// on_demand, spot: that market only; anywhere: as the spec says). What every decision about a
// queued or a running job starts from.
scheduler::Job remaining_work(const store::JobRow& row, const train::JobSpec& spec, double done,
                              jobs::MoveTarget held_to);

// Whether a spot offer that fits `job` (held to spot) can be launched now: a cloud provider is
// configured and the offer was not set aside after a failed launch.
bool spot_launchable_now(scheduler::Job job, const scheduler::PlacementContext& ctx, int64_t now_ms);

class PlacementPasses {
 public:
  PlacementPasses(store::Store& store, const Clock& clock, jobs::JobService& jobs, const PlacementSettings& settings,
                  OfferBook& offers, HeartbeatCalibration& calibration, SpotDeadlines& deadlines);
  PlacementPasses(const PlacementPasses&) = delete;
  PlacementPasses& operator=(const PlacementPasses&) = delete;

  // At start: indexes the queued jobs whose stored decision found them unplaceable by their stored
  // key (to be tried again one per key) and requests a decision for every other queued job.
  // Errors: the store's.
  // Starts the grace before the fleet is seen (see the header).
  Status load_queue() JOBCTL_EXCLUDES(requests_mu_, pass_mu_);
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
  // From now on passes stop before their next job (see the header).
  void stop() { stopping_.store(true, std::memory_order_relaxed); }
  // The decision placement would make for this spec now (the placement document), stored nowhere.
  // Errors: the spec's.
  Expected<nlohmann::json> quote(const train::JobSpec& spec) JOBCTL_EXCLUDES(cache_mu_);

  // A job finished: command jobs priced from the runs of their job key see its run (the history's
  // cache is dropped).
  void job_finished() { command_runtimes_.forget(); }

  // What every decision is made against, for other rules that price options the same way (moves
  // for savings): the offers and calibration now (the offers' generation when asked), and the
  // local workers with what each holds.
  std::shared_ptr<const scheduler::PlacementContext> context(uint64_t* offers_generation) JOBCTL_EXCLUDES(cache_mu_);
  // The context over every offer, the set-aside ones included; nullptr while none is set aside.
  std::shared_ptr<const scheduler::PlacementContext> every_offer_context() JOBCTL_EXCLUDES(cache_mu_);
  // A cloud choice many times what the job would pay were no offer set aside: re-decided under
  // the price_jump_ceiling, so that it waits for the cheaper offer (`job` gets the cap). The
  // reason's addition; empty where nothing changed.
  std::string bound_price_jump(scheduler::Job& job, scheduler::PlacementDecision& d, std::vector<scheduler::Candidate>& table,
                               int64_t now_ms, const scheduler::PlacementContext& ctx,
                               const scheduler::LocalCapacity& capacity) JOBCTL_EXCLUDES(cache_mu_);
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
    std::string unplaceable_key;    // what the job needs (see the header); set when it is unplaceable
  };
  // Queued jobs last decided unplaceable, with one key (see the header).
  struct UnplaceableGroup {
    std::set<int64_t> jobs;
    uint64_t tried_under = 0;  // the inputs generation one of them was last decided under (0: none)
  };

  // The index of unplaceable jobs: a job's key and its group, kept in step.
  void index_unplaceable(int64_t job_id, const std::string& key, uint64_t tried_under) JOBCTL_REQUIRES(pass_mu_);
  void forget_unplaceable(int64_t job_id) JOBCTL_REQUIRES(pass_mu_);
  // One pass over these jobs (those still queued), one capacity read, decisions committed a group
  // at a time. skip_unchanged: leave out indexed jobs whose key was tried under the current inputs.
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

  std::atomic<bool> stopping_{false};

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
  // The index (see the header): key -> its jobs, and job -> its group (map iterators stay valid
  // while the group exists; a group is erased only once it has no job).
  using UnplaceableGroups = std::map<std::string, UnplaceableGroup>;
  UnplaceableGroups unplaceable_groups_ JOBCTL_GUARDED_BY(pass_mu_);
  std::map<int64_t, UnplaceableGroups::iterator> unplaceable_keys_ JOBCTL_GUARDED_BY(pass_mu_);
  // Until when a pass that sees no local worker and no Slurm partition has not seen the fleet
  // yet, and the jobs whose `unplaceable` event that held back (see the header).
  int64_t fleet_grace_until_ms_ JOBCTL_GUARDED_BY(pass_mu_) = 0;
  std::set<int64_t> event_held_ JOBCTL_GUARDED_BY(pass_mu_);

  Mutex cache_mu_;  // held briefly: passes and quotes share these caches
  std::shared_ptr<const scheduler::PlacementContext> context_ JOBCTL_GUARDED_BY(cache_mu_);
  std::shared_ptr<const scheduler::PlacementContext> every_offer_context_ JOBCTL_GUARDED_BY(cache_mu_);
  uint64_t every_offer_catalog_generation_ JOBCTL_GUARDED_BY(cache_mu_) = 0;
  bool any_set_aside_ JOBCTL_GUARDED_BY(cache_mu_) = false;  // as of the newest context()
  uint64_t context_offers_generation_ JOBCTL_GUARDED_BY(cache_mu_) = 0;
  uint64_t context_calibration_generation_ JOBCTL_GUARDED_BY(cache_mu_) = 0;
  // A worker's pool entry (nullopt: not a local worker): capabilities never change after a
  // worker registers, so they are parsed once.
  std::map<int64_t, std::optional<scheduler::Worker>> worker_pools_ JOBCTL_GUARDED_BY(cache_mu_);
  // The CPU machines local workers are (device key -> peak FP32 TFLOPS), for the context's
  // PlacementConfig::cpu_peak_tflops: filled as workers are read (local_capacity(), which every
  // caller runs before context()); a new machine rebuilds the context.
  std::map<std::string, double> cpu_peaks_ JOBCTL_GUARDED_BY(cache_mu_);
  // Likewise the GPUs of local workers the GPU table does not know (device name -> GB per GPU),
  // for PlacementConfig::unknown_gpu_memory_gb.
  std::map<std::string, double> unknown_gpus_ JOBCTL_GUARDED_BY(cache_mu_);
  bool cpu_peaks_changed_ JOBCTL_GUARDED_BY(cache_mu_) = false;  // either map changed
};

}  // namespace jobctl::daemon::placement
