// Runtime calibration from heartbeats (docs/cost-model.md, "Calibration"): every heartbeat's step
// time (progress.step_ms, with progress.total_steps) is one observation of efficiency for (the
// worker's GPU model, the job's model kind), kept by cost::EfficiencyCalibrator, written to the
// `calibration` table and loaded at start, so later estimates use it.
//
// Two halves, so that the store's writer thread never waits on the store: record() runs where a
// heartbeat commits (a writer-thread completion) and only queues the observation; apply_recorded()
// runs on the placement thread: it reads what one step of the job is on that worker (the job's
// spec and the worker's GPUs, once per lease), updates the calibrator, and writes the changed
// figures in one store change.
//
// Ownership and thread safety: borrows the store and the clock (which must outlive it); every
// method is safe from any thread. At most kMaxRecorded observations wait for the placement
// thread; beyond that new ones are dropped (a calibration is a running mean: losing samples under
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
#include "daemon/store/store.h"

namespace jobctl::daemon::placement {

class HeartbeatCalibration {
 public:
  static constexpr size_t kMaxRecorded = 100'000;

  struct Snapshot {
    std::shared_ptr<const cost::EfficiencyCalibrator> calibrator;
    uint64_t generation = 0;  // changes with every applied observation
  };

  HeartbeatCalibration(store::Store& store, const Clock& clock);
  HeartbeatCalibration(const HeartbeatCalibration&) = delete;
  HeartbeatCalibration& operator=(const HeartbeatCalibration&) = delete;

  // Loads the persisted calibration (start-up). Errors: the store's, or an unreadable row.
  Status load() JOBCTL_EXCLUDES(mu_);
  // Queues a heartbeat's progress (JSON object text) from the worker holding the job. Returns
  // true when it is the first waiting observation (the caller wakes the placement thread). Does
  // not touch the store.
  bool record(int64_t job_id, int64_t worker_id, const std::string& progress_json) JOBCTL_EXCLUDES(mu_);
  // Applies every queued observation (the placement thread). An observation whose job or worker
  // is gone is skipped. Errors: reads or the write that failed (the observations are lost), or
  // observations dropped because the queue was full.
  Status apply_recorded() JOBCTL_EXCLUDES(mu_, apply_mu_);
  Snapshot snapshot() const JOBCTL_EXCLUDES(mu_);
  std::vector<cost::Calibration> calibrations() const JOBCTL_EXCLUDES(mu_);

 private:
  struct Observation {
    int64_t job_id = 0;
    int64_t worker_id = 0;
    double step_ms = 0;
    double total_steps = 0;
  };
  // What one step of a job is on the worker running it.
  struct StepShape {
    int64_t worker_id = 0;
    double total_steps = 0;
    double step_flops = 0;
    std::string gpu;
    std::string model_kind;
    cost::Precision precision = cost::Precision::fp32;
    int gpus = 1;
  };
  Expected<std::optional<StepShape>> step_shape(const Observation& o) JOBCTL_REQUIRES(apply_mu_);

  store::Store& store_;
  const Clock& clock_;
  Mutex apply_mu_;  // one apply_recorded() at a time; taken before mu_
  std::map<int64_t, StepShape> shapes_ JOBCTL_GUARDED_BY(apply_mu_);  // by job id: a cache, not state
  mutable Mutex mu_;
  std::vector<Observation> recorded_ JOBCTL_GUARDED_BY(mu_);
  size_t dropped_ JOBCTL_GUARDED_BY(mu_) = 0;
  cost::EfficiencyCalibrator calibrator_ JOBCTL_GUARDED_BY(mu_);
  Snapshot snapshot_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::daemon::placement
