// Runtime calibration from what workers report (docs/cost-model.md, "Calibration"): once per
// finished run, the run's steady-state step time (cost/steady_step_time.h: the median of the step
// windows its heartbeats carried, after the first) gives an efficiency for (the worker's device,
// the job's model kind), and its elapsed time less its steps at that pace gives the overhead a run
// spends outside its steps (start-up, evaluation, checkpoints); cost::EfficiencyCalibrator keeps
// both, they are written to the `calibration` table and loaded at start, and later estimates are
// compute at the calibrated efficiency plus that overhead. That is what makes the estimate of
// identical jobs converge on what they take. Only a run that went from its first step to its end
// on one worker is observed (a resumed run's elapsed time is not a whole run's).
//
// Two halves, so that the store's writer thread never waits on the store: record() and
// record_finished() run where a heartbeat or a completion commits (writer-thread completions) and
// only queue; apply_recorded() runs on the placement thread: it keeps each running job's step
// windows, reads what one step of a finished job is on its worker (the job's spec and the worker's
// device), updates the calibrator, and writes the changed figures in one store
// change.
//
// Ownership and thread safety: borrows the store and the clock (which must outlive it); every
// method is safe from any thread. At most kMaxRecorded reports wait for the placement thread;
// beyond that new ones are dropped (a calibration is a running mean: losing samples under
// overload only slows it down) and counted in the next apply_recorded()'s error.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "base/mutex.h"
#include "cost/efficiency_calibrator.h"
#include "cost/steady_step_time.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::placement {

class HeartbeatCalibration {
 public:
  static constexpr size_t kMaxRecorded = 100'000;
  // A worker's first kNewWorkerRuns accepted runs (since this daemon started) are observed with
  // weight kNewWorkerWeight (cost/efficiency_calibrator.h: a weighted median), later ones with 1.
  static constexpr int64_t kNewWorkerRuns = 3;
  static constexpr double kNewWorkerWeight = 0.25;

  struct Snapshot {
    std::shared_ptr<const cost::EfficiencyCalibrator> calibrator;
    uint64_t generation = 0;  // changes with every applied observation
  };

  HeartbeatCalibration(store::Store& store, const Clock& clock);
  HeartbeatCalibration(const HeartbeatCalibration&) = delete;
  HeartbeatCalibration& operator=(const HeartbeatCalibration&) = delete;

  // Loads the persisted calibration (start-up). Errors: the store's, or an unreadable row.
  Status load() JOBCTL_EXCLUDES(mu_);
  // Queues a heartbeat's progress (JSON object text: step, step_ms, total_steps, start_step) from
  // the worker holding the job. Returns true when it is the first waiting report (the caller wakes
  // the placement thread). Does not touch the store.
  bool record(int64_t job_id, int64_t worker_id, const std::string& progress_json) JOBCTL_EXCLUDES(mu_);
  // Queues the end of a job that succeeded on `worker_id`, with its result (JSON object text:
  // elapsed_s, steps). Returns as record() does. Does not touch the store.
  bool record_finished(int64_t job_id, int64_t worker_id, const std::string& result_json) JOBCTL_EXCLUDES(mu_);
  // Applies every queued report (the placement thread). A report whose job or worker is gone, or
  // a run not seen whole, is skipped; a run whose figures are implausible
  // (cost::EfficiencyCalibrator: faster than the device's peak, a day outside its steps) changes
  // nothing and is named in the error. Errors: that, reads or the write that failed (the
  // observations are lost), or reports dropped because the queue was full.
  Status apply_recorded() JOBCTL_EXCLUDES(mu_, apply_mu_);
  Snapshot snapshot() const JOBCTL_EXCLUDES(mu_);
  std::vector<cost::Calibration> calibrations() const JOBCTL_EXCLUDES(mu_);

 private:
  // A heartbeat (finished false: step, step_ms, total_steps, start_step) or a job's end
  // (finished true: elapsed_s, steps).
  struct Report {
    int64_t job_id = 0;
    int64_t worker_id = 0;
    bool finished = false;
    int64_t step = 0;
    double step_ms = 0;
    double total_steps = 0;
    int64_t start_step = 0;
    double elapsed_s = 0;
    int64_t steps = 0;
  };
  // A running job's step windows on the worker that runs it.
  struct Run {
    int64_t worker_id = 0;
    double total_steps = 0;
    int64_t start_step = 0;  // > 0: resumed from a checkpoint, not a whole run
    cost::SteadyStepTime steady;
  };
  // What one step of a job is on the worker running it.
  struct StepShape {
    double step_flops = 0;
    std::string device;          // placement_matcher.h's worker_device
    double peak_flops = 0;       // the device's peak at the job's precision, x the GPUs it holds
    std::string model_kind;
  };
  bool enqueue(Report r) JOBCTL_EXCLUDES(mu_);
  Expected<std::optional<StepShape>> step_shape(int64_t job_id, int64_t worker_id, double total_steps);

  store::Store& store_;
  const Clock& clock_;
  Mutex apply_mu_;  // one apply_recorded() at a time; taken before mu_
  std::map<int64_t, Run> runs_ JOBCTL_GUARDED_BY(apply_mu_);           // by job id: running jobs
  std::map<int64_t, int64_t> accepted_runs_ JOBCTL_GUARDED_BY(mu_);    // by worker id
  mutable Mutex mu_;
  std::vector<Report> recorded_ JOBCTL_GUARDED_BY(mu_);
  size_t dropped_ JOBCTL_GUARDED_BY(mu_) = 0;
  cost::EfficiencyCalibrator calibrator_ JOBCTL_GUARDED_BY(mu_);
  Snapshot snapshot_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::daemon::placement
