// The provisioner (docs/clouds.md, "The provisioner"): turns placement's cloud choices
// into instances, and keeps what runs in the cloud, what the store says and what the ledger bills
// in agreement.
//
// Every pass (cloud.poll_s, or at once after wake()):
//  1. Sync: describe(tag) from the provider is the truth. A row whose instance the provider
//     reports terminated (or no longer reports) is ended; a live instance carrying our tag that
//     no row knows — launched by a daemon that died before recording it — is adopted, so nothing
//     runs unbilled or unwatched. The first successful sync after start is the reconciliation.
//  2. Interruptions: notices from the provider's feed are recorded on the instance and as a
//     `spot_notice` event on the job its worker runs (the worker itself checkpoints and hands the
//     job back). A worker whose instance has ended but still holds a lease is released at once
//     (JobService::release_worker_leases), without waiting for the lease timeout.
//  3. Ledger: each instance's time is accrued per second at its price — from launch (boot
//     included) to end — in segments, one per job its worker runs (checkpoint uploads happen
//     under the job's lease, so they are the job's); idle time is booked to no job.
//  4. Idle and boot limits: an instance whose worker holds no job while no placed job wants its
//     kind is stopped after cloud.idle_timeout_s; one whose worker never registers, after
//     cloud.boot_timeout_s. An instance launched for one job alone (a command job, a gang's node)
//     is stopped as soon as that job neither runs on it nor waits for it; while the job is queued
//     again for placement (a gang restarting), it counts as idle.
//  5. Launches: for placed jobs whose chosen option is a cloud offer, as many instances of that
//     (type, spot) as there are such jobs beyond the live instances of the kind that are free
//     (booting or idle), up to cloud.max_instances. A command job (the user's own program) gets an
//     instance of its own, whose worker runs that job alone (cloud::LaunchRequest::for_job); a
//     gang of N nodes gets N such instances, launched in one pass in the zone its placement
//     priced, or none while fewer than N fit under cloud.max_instances (its own instances still
//     booting or idle in that zone count towards the N: after a restart a healthy node's
//     instance is used again). A launch that fails is retried on later passes (a gang's others
//     of that pass are terminated at once); after cloud.launch_attempts failures the offer (its
//     spot market, for spot) is set aside by placement for cloud.unavailable_cooldown_s and the
//     job is unplaced, so placement chooses again without it (on demand, say, when spot has no
//     capacity).
//
// Instances outlive the daemon: stopping the provisioner (or killing jobctld) leaves them running
// so their jobs go on; the next start reconciles.
//
// Ownership: borrows the store, the clock, the job and placement services (all outlive it); owns
// the provider and its thread. Thread safety: every public method is safe from any thread;
// passes never overlap.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "base/mutex.h"
#include "base/retry.h"
#include "cloud/provider.h"
#include "daemon/provisioning/cloud_config.h"
#include "daemon/jobs/job_service.h"
#include "daemon/ledger/ledger.h"
#include "daemon/placement/placement_service.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::provisioning {

// What one pass did (tests and the log read it).
struct ProvisionerPass {
  int launched = 0;
  int launch_failures = 0;
  int terminated = 0;     // asked to end: idle, never booted
  int ended = 0;          // seen ended at the provider
  int adopted = 0;
  int notices = 0;
  int released = 0;       // leases released because the instance under them ended
};

// GET /v1/instances: an instance row and what the daemon knows around it.
struct InstanceView {
  store::InstanceRow row;
  std::optional<int64_t> worker_id;      // its worker, once registered
  std::optional<int64_t> running_job_id; // the job that worker holds now
  double billed_usd = 0;                 // the ledger's total for it
};

class Provisioner {
 public:
  Provisioner(store::Store& store, const Clock& clock, jobs::JobService& jobs, placement::PlacementService& placement,
              std::unique_ptr<cloud::Provider> provider, CloudSettings settings);
  ~Provisioner();
  Provisioner(const Provisioner&) = delete;
  Provisioner& operator=(const Provisioner&) = delete;

  // The URL instances' workers connect to, when cloud.server_url does not set one. Before start().
  void set_server_url(std::string url);

  // One pass now, on the caller's thread (tests; the thread calls it too).
  Expected<ProvisionerPass> run_pass();

  // Starts the background thread: a pass every cloud.poll_s, sooner after wake().
  void start();
  // Stops the thread after its current pass. Instances keep running. Idempotent.
  void stop();
  // Placement placed a job on a cloud offer, or a worker freed up: run a pass soon.
  void wake();

  Expected<std::vector<InstanceView>> instances();
  // Whether a sync with the provider has succeeded since start, and the last pass's error.
  bool reconciled() const;
  std::string last_error() const;
  const CloudSettings& settings() const { return settings_; }
  std::string_view provider_kind() const { return provider_->kind(); }

 private:
  struct Workers;  // the instance -> worker -> job maps of one pass (provisioner.cpp)

  Expected<Workers> snapshot();
  // The steps of one pass (run_pass holds pass_mu_).
  Status sync(const std::vector<cloud::Instance>& described, ProvisionerPass& pass, int64_t now)
      JOBCTL_REQUIRES(pass_mu_);
  // The steps below share one snapshot of the instance rows; a step that writes a row updates
  // the snapshot too, so a later step never writes back a stale copy (a notice recorded, then
  // lost to the ledger step's write of the row it read before).
  Status record_notices(Workers& w, ProvisionerPass& pass) JOBCTL_REQUIRES(pass_mu_);
  Status release_lost_leases(const Workers& w, ProvisionerPass& pass) JOBCTL_REQUIRES(pass_mu_);
  Status accrue(Workers& w, int64_t now) JOBCTL_REQUIRES(pass_mu_);
  Status stop_idle(Workers& w, ProvisionerPass& pass, int64_t now) JOBCTL_REQUIRES(pass_mu_);
  Status launch_for_placed_jobs(const Workers& w, ProvisionerPass& pass, int64_t now) JOBCTL_REQUIRES(pass_mu_);
  // Records an instance launched for job `q` (its row and an instance_launched event); `abandoned`:
  // launched with a gang's others, one of which failed: recorded as being terminated.
  Status record_launch(const cloud::Instance& inst, const cost::Offer& offer, bool spot,
                       const store::QueuedJobRow& q, bool abandoned, int64_t now) JOBCTL_REQUIRES(pass_mu_);
  Status put(const store::InstanceRow& row);
  void loop();

  store::Store& store_;
  const Clock& clock_;
  jobs::JobService& jobs_;
  placement::PlacementService& placement_;
  std::unique_ptr<cloud::Provider> provider_;
  CloudSettings settings_;
  ledger::Ledger ledger_;

  Mutex pass_mu_;  // one pass at a time
  // job id -> failed launches for its current placement
  std::map<int64_t, int> launch_failures_ JOBCTL_GUARDED_BY(pass_mu_);
  // A market (instance type, region, spot) whose launch failed is tried again only after an
  // exponential backoff with jitter (kLaunchBackoff in provisioner.cpp), whichever job asks: a
  // failed launch unplaces nothing at once, and the next pass comes at once, so without it the
  // launches of a market with no capacity came 0.1 s apart. Steady clock. A success forgets it.
  struct LaunchBackoff {
    Backoff backoff;
    int64_t next_try_steady_ms = 0;
  };
  std::map<std::tuple<std::string, std::string, bool>, LaunchBackoff> launch_backoff_ JOBCTL_GUARDED_BY(pass_mu_);
  int64_t notices_since_ms_ JOBCTL_GUARDED_BY(pass_mu_) = 0;

  mutable Mutex mu_;
  CondVar cv_;
  bool stopping_ JOBCTL_GUARDED_BY(mu_) = false;
  bool woken_ JOBCTL_GUARDED_BY(mu_) = false;
  bool reconciled_ JOBCTL_GUARDED_BY(mu_) = false;
  std::string last_error_ JOBCTL_GUARDED_BY(mu_);
  std::string server_url_ JOBCTL_GUARDED_BY(mu_);
  std::thread thread_;  // started by start() under mu_, joined by stop()
};

}  // namespace jobctl::daemon::provisioning
