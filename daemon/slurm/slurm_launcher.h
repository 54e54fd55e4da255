// The Slurm launcher (docs/slurm.md, "How jobctld submits"): turns placement's choice of a Slurm
// partition into one Slurm batch job running `jobctl-worker` for exactly that job, and keeps what
// Slurm runs, what the store records (the slurm_jobs table) and the jobs in agreement — as the
// provisioner does for cloud instances (daemon/provisioning/provisioner.h).
//
// Every pass (slurm.poll_s, or soon after wake()):
//  1. Read: `squeue --json --states=all`, keeping the jobs whose comment is `jobctl:<tag>`. Without
//     that reading nothing else is safe (a submission could duplicate one Slurm already has), so a
//     pass that cannot read the queue does nothing.
//  2. Each live row against Slurm (slurm/job_outcome.h): a Slurm job that ended — completed,
//     cancelled, timed out, failed, requeued by Slurm — ends its row with that event, recorded on
//     the jobctl job too. A requeued one is cancelled once its processes are gone (it would run
//     again after BeginTime, about two minutes, for a job placement may send elsewhere). A Slurm
//     job no longer reported at all has vanished. Once its processes are gone, a lease its worker
//     still holds is released at once (the job is requeued in jobctl, as for a reclaimed cloud
//     instance); a jobctl job still placed on it, never leased, is unplaced so placement chooses
//     again. The worker's own checkpoint and hand-back on SIGTERM come first: a job handed back
//     is queued and re-placed by placement, wherever it is cheapest then.
//  3. Lingering Slurm jobs: one whose jobctl job was cancelled is cancelled at once; one whose job
//     succeeded or failed, or runs elsewhere now, is cancelled when it has not ended on its own
//     within kLingerMs (its worker exits after its one job).
//  4. Adoption: a Slurm job of ours that no row knows — submitted by a daemon that died before it
//     recorded it — is recorded (its jobctl job read from its name, `jobctl-job-<id>`), so it is
//     watched and never submitted twice. The first pass after start is the reconciliation after a
//     restart: recorded Slurm jobs still running are kept, those that vanished are handled as
//     in 2.
//  5. Submissions: each job placed on a partition (chosen option "slurm") with no live row gets
//     one `sbatch` (slurm/batch_job.h: --gres from the job's GPUs, --time from the placement's
//     estimate with slurm.time_margin, --signal lead, --requeue, --comment=jobctl:<tag>) running
//     slurm.worker_command plus `--instance-provider slurm --instance-id $SLURM_JOB_ID
//     --instance-type <partition> --for-job <id> --max-jobs 1`: the worker registers as that
//     Slurm job, for that one job, and placement_matcher.h offers it nothing else. A gang of N
//     nodes is one batch job of N tasks (slurm/batch_job.h), its batch shell running
//     `srun ... jobctl-worker ... --instance-id $SLURM_JOB_ID.$SLURM_PROCID`: N workers, each a
//     node of the gang, which the broker leases together like any gang's. The row and a
//     `slurm_submitted` event are written together. A submission Slurm refuses is retried on
//     later passes; after kSubmitAttempts refusals — or kSubmitAttempts batch jobs of the job
//     failing before its worker took it (a worker command that cannot run on the nodes, say) — the
//     partition is set aside for kSetAsideMs and the job is unplaced, so placement chooses
//     elsewhere rather than submitting again and again.
//
// Slurm jobs outlive the daemon: stopping the launcher (or killing jobctld) leaves them running so
// their jobs go on; the next start reconciles.
//
// Ownership: borrows the store, the clock, the job service and the log (all outlive it); owns its
// thread. Thread safety: every public method is safe from any thread; passes never overlap.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/expected.h"
#include "base/log.h"
#include "base/mutex.h"
#include "base/pass_log.h"
#include "base/ticker.h"
#include "daemon/jobs/job_service.h"
#include "daemon/slurm/slurm_config.h"
#include "daemon/slurm/slurm_partitions.h"
#include "daemon/store/store.h"
#include "slurm/slurm_commands.h"

namespace jobctl::daemon::slurm {

// What one pass did (tests and the log read it).
struct SlurmLaunchPass {
  int submitted = 0;
  int submit_failures = 0;
  int ended = 0;      // rows ended: the Slurm job ended, was requeued or vanished
  int cancelled = 0;  // scancel sent by jobctld (requeued, lingering or unwanted)
  int adopted = 0;
  int released = 0;   // leases released because the Slurm job under them ended
  int unplaced = 0;   // placed jobs sent back to placement (their Slurm job ended before a worker took them)
};

class SlurmLauncher {
 public:
  // A Slurm job whose jobctl job has ended (or runs elsewhere) is cancelled after this long.
  static constexpr int64_t kLingerMs = 30'000;
  // Refused submissions of one placement, or batch jobs of one job that failed before its worker
  // took it, before the partition is set aside for kSetAsideMs (and the job placed again).
  static constexpr int kSubmitAttempts = 3;
  static constexpr int64_t kSetAsideMs = 600'000;

  // `partitions`: where a partition is set aside (none: nothing is).
  SlurmLauncher(store::Store& store, const Clock& clock, jobs::JobService& jobs, const SlurmSettings& settings,
                Log& log = stderr_log(), SlurmPartitions* partitions = nullptr);
  ~SlurmLauncher() { stop(); }
  SlurmLauncher(const SlurmLauncher&) = delete;
  SlurmLauncher& operator=(const SlurmLauncher&) = delete;

  // The URL the batch jobs' workers connect to when slurm.server_url does not set one.
  void set_server_url(std::string url) JOBCTL_EXCLUDES(mu_);

  // One pass now, on the caller's thread (tests; the thread calls it too).
  Expected<SlurmLaunchPass> run_pass() JOBCTL_EXCLUDES(pass_mu_, mu_);

  // Starts the thread: a pass every slurm.poll_s, sooner after wake(). Failed passes are logged
  // (base/pass_log.h). start() and stop() from the owner's thread; stop() leaves Slurm jobs running.
  void start() JOBCTL_EXCLUDES(mu_);
  void stop() JOBCTL_EXCLUDES(mu_);
  // A job was placed on a partition: run a pass soon. Any thread; nothing before start().
  void wake() JOBCTL_EXCLUDES(mu_);

 private:
  struct Pass;  // what one pass read (slurm_launcher.cpp)

  Status reconcile_row(Pass& p, store::SlurmJobRow row) JOBCTL_REQUIRES(pass_mu_);
  Status adopt(Pass& p) JOBCTL_REQUIRES(pass_mu_);
  Status submit_placed(Pass& p) JOBCTL_REQUIRES(pass_mu_);
  Status end_row(Pass& p, store::SlurmJobRow row, const std::string& event, const std::string& reason)
      JOBCTL_REQUIRES(pass_mu_);
  Status cancel(Pass& p, const store::SlurmJobRow& row, const std::string& why) JOBCTL_REQUIRES(pass_mu_);
  void set_aside(const std::string& partition, int64_t now, const std::string& why);
  std::string server_url() const JOBCTL_EXCLUDES(mu_);

  store::Store& store_;
  const Clock& clock_;
  jobs::JobService& jobs_;
  const SlurmSettings settings_;
  const ::jobctl::slurm::SlurmCommands commands_;
  Log& log_;
  SlurmPartitions* const partitions_;
  PassLog pass_log_{"slurm launcher"};

  Mutex pass_mu_;  // one pass at a time
  std::map<int64_t, int> submit_failures_ JOBCTL_GUARDED_BY(pass_mu_);    // job id -> refused sbatch
  std::map<int64_t, int> failed_starts_ JOBCTL_GUARDED_BY(pass_mu_);      // job id -> batch jobs that failed
                                                                           // before its worker took it
  std::map<int64_t, int64_t> lingering_since_ JOBCTL_GUARDED_BY(pass_mu_);  // Slurm job id -> first seen unwanted

  mutable Mutex mu_;
  std::string server_url_ JOBCTL_GUARDED_BY(mu_);
  // Wake-ups come from placement's thread at any time, before start() too: they reach the ticker
  // only while this is set (under mu_), between start() and stop().
  bool running_ JOBCTL_GUARDED_BY(mu_) = false;
  std::optional<Ticker> ticker_;  // emplaced by start() before running_ is set; stopped by stop()
};

}  // namespace jobctl::daemon::slurm
