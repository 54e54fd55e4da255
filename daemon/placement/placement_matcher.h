// Matching that honours placement (contract in docs/api.md, "The placement document"): a worker is
// offered only jobs the placement service has placed, and only where the chosen option says:
//   - option "local": a local worker (no "instance" in its registration) that fits the job's
//     resources (job_fits_worker) and whose device is the chosen pool's (worker_device: a GPU
//     model, or a CPU machine's key; "cpu": any CPU-only one);
//   - option "on_demand" / "spot": only a worker whose registration carries an "instance" with the
//     chosen instance type and the same spot flag (and that is not a Slurm batch job's);
//   - option "slurm": only the worker of the Slurm batch job jobctld submitted for this job (its
//     "instance" has provider "slurm" and this job's id as job_id: daemon/slurm/slurm_launcher.h).
// Jobs not placed yet (queued, placement pending or nothing can run them) are offered to no one.
// With a start board (start_board.h), a job that the reservation on a worker forbids (the backfill
// rule) is not offered to that worker; the wide job holding the reservation is offered to it when
// enough of its GPUs are free.
//
// Ownership: borrows the start board and the clock (they outlive it; none: no reservations).
// Thread safety: pick() reads only its arguments and the board (the lease broker calls it under
// its mutex).
#pragma once

#include "base/clock.h"
#include "daemon/jobs/job_matcher.h"
#include "daemon/store/records.h"

namespace jobctl::daemon::placement {

class StartBoard;

class PlacementMatcher final : public jobs::JobMatcher {
 public:
  PlacementMatcher() = default;
  PlacementMatcher(StartBoard& board, const Clock& clock) : board_(&board), clock_(&clock) {}

  bool offers(const jobs::QueuedJob& job, int64_t worker_id, const jobs::WorkerCapabilities& worker) const override;

 private:
  StartBoard* board_ = nullptr;
  const Clock* clock_ = nullptr;
};

// Whether a placed job's chosen option lets `worker` run it (the rule above).
bool placement_allows(const jobs::QueuedJob& job, const jobs::WorkerCapabilities& worker);

// The GPU model a worker offers, canonical ("cpu" for a CPU-only worker).
std::string worker_gpu_model(const jobs::WorkerCapabilities& worker);

// The device a worker is to placement and calibration: its GPU model, or for a CPU-only worker
// that said what its CPU is, the machine's key (cost/cpu_peak.h: "cpu/AMD EPYC/2"), so CPUs of
// different models and core counts are timed at their own peaks and learn apart.
std::string worker_device(const jobs::WorkerCapabilities& worker);

// That CPU machine's peak FP32 TFLOPS (cost/cpu_peak.h); 0 for a GPU worker or a CPU that did
// not say enough to compute one.
double worker_cpu_peak_tflops(const jobs::WorkerCapabilities& worker);

}  // namespace jobctl::daemon::placement
