#include "daemon/placement/heartbeat_calibration.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "cost/cpu_peak.h"
#include "cost/gpu_specs.h"
#include "cost/workload.h"
#include "daemon/jobs/worker_capabilities.h"
#include "daemon/placement/placement_matcher.h"
#include "train/spec/job_spec.h"
#include "train/spec/model_stats.h"

namespace jobctl::daemon::placement {

using nlohmann::json;

HeartbeatCalibration::HeartbeatCalibration(store::Store& store, const Clock& clock) : store_(store), clock_(clock) {
  snapshot_ = Snapshot{std::make_shared<const cost::EfficiencyCalibrator>(), 1};
}

Status HeartbeatCalibration::load() {
  auto rows = store_.calibrations();
  if (!rows) return rows.error();
  json entries = json::array();
  for (const auto& c : *rows) {
    // Since migration 14 the row carries its whole entry, window included; an older row is its
    // figures alone (read as one run, when plausible).
    if (c.window.is_object()) {
      entries.push_back(c.window);
      continue;
    }
    entries.push_back({{"gpu", c.gpu_model},
                       {"model_kind", c.model_kind},
                       {"log_efficiency", c.log_efficiency},
                       {"efficiency", std::exp(c.log_efficiency)},
                       {"samples", c.samples},
                       {"overhead_s", c.overhead_seconds},
                       {"overhead_samples", c.overhead_samples}});
  }
  auto calibrator = cost::EfficiencyCalibrator::from_json(json{{"version", 1}, {"entries", entries}});
  if (!calibrator) return calibrator.error();
  MutexLock lock(mu_);
  calibrator_ = std::move(*calibrator);
  snapshot_ = Snapshot{std::make_shared<const cost::EfficiencyCalibrator>(calibrator_), snapshot_.generation + 1};
  return {};
}

bool HeartbeatCalibration::enqueue(Report r) {
  MutexLock lock(mu_);
  if (recorded_.size() >= kMaxRecorded) {
    ++dropped_;
    return false;
  }
  recorded_.push_back(std::move(r));
  return recorded_.size() == 1;
}

bool HeartbeatCalibration::record(int64_t job_id, int64_t worker_id, const std::string& progress_json) {
  // A worker's report as it arrived: one that does not decode teaches nothing.
  const auto p = store::decode_progress(progress_json, "job " + std::to_string(job_id));
  if (!p) return false;
  Report r{.job_id = job_id, .worker_id = worker_id};
  r.step = static_cast<int64_t>(p->step);
  r.step_ms = p->step_ms;
  r.total_steps = p->total_steps;
  r.start_step = static_cast<int64_t>(p->start_step);
  if (!(r.step_ms > 0) || !(r.total_steps > 0) || r.step <= 0) return false;
  return enqueue(r);
}

bool HeartbeatCalibration::record_finished(int64_t job_id, int64_t worker_id, const std::string& result_json) {
  const auto p = store::decode_result(result_json, "job " + std::to_string(job_id));
  if (!p) return false;
  Report r{.job_id = job_id, .worker_id = worker_id, .finished = true};
  r.elapsed_s = p->elapsed_s;
  r.steps = static_cast<int64_t>(p->steps);
  if (!(r.elapsed_s > 0)) return false;  // nothing to learn the overhead from
  return enqueue(r);
}

Expected<std::optional<HeartbeatCalibration::StepShape>> HeartbeatCalibration::step_shape(int64_t job_id,
                                                                                           int64_t worker_id,
                                                                                           double total_steps) {
  auto job = store_.get_job(job_id);
  if (!job) return job.error();
  auto worker = store_.get_worker(worker_id);
  if (!worker) return worker.error();
  if (!*job || !*worker) return std::optional<StepShape>{};  // gone meanwhile
  const train::JobSpec* spec = (*job)->spec.get();
  const jobs::WorkerCapabilities* caps = &(*worker)->capabilities;
  if (!spec) return std::optional<StepShape>{};
  // A simulated worker (fake GPUs, or a simulated cloud's instance) trains on the CPU whatever it
  // claims: its step times say nothing about the GPU it names, and must never calibrate it.
  if (caps->simulated) return std::optional<StepShape>{};
  // A command job's steps are the program's own, not a model's FLOPs: nothing to calibrate, unless
  // estimate.model says what its work is (a "transformer" run calibrates that class only).
  if (spec->is_command() && !(spec->estimate && spec->estimate->model)) return std::optional<StepShape>{};
  const train::ModelStats stats = train::model_stats(*spec);
  const cost::Workload w = cost::workload_from_spec(*spec, stats);
  StepShape shape;
  // The GPUs the job holds: its resources.gpus, or with "auto" the count placement chose (the row's).
  const int job_gpus = std::max((*job)->resource_gpus, 1);
  shape.step_flops = cost::training_flops_for(w, job_gpus) / total_steps;
  shape.device = worker_device(*caps);
  shape.model_kind = w.model_kind;
  // The peak placement times this device at (scheduler/placement.h): a CPU machine's own, a GPU
  // model's from the table, times the GPUs the job holds.
  if (const double cpu_peak = worker_cpu_peak_tflops(*caps); cpu_peak > 0) {
    shape.peak_flops = cost::peak_tflops(cost::cpu_machine_spec(shape.device, cpu_peak), w.precision) * 1e12;
  } else if (const cost::GpuSpec* gpu = cost::find_gpu(shape.device)) {
    const int gpus = caps->gpus.empty()
                         ? 1
                         : std::min<int>(job_gpus, static_cast<int>(caps->gpus.size()));
    shape.peak_flops = cost::peak_tflops(*gpu, w.precision) * 1e12 * gpus;
  } else {
    return std::optional<StepShape>{};  // a device no table row describes: nothing to time it by
  }
  return std::optional<StepShape>(std::move(shape));
}

Status HeartbeatCalibration::apply_recorded() {
  MutexLock apply(apply_mu_);
  std::vector<Report> batch;
  size_t dropped = 0;
  {
    MutexLock lock(mu_);
    batch.swap(recorded_);
    std::swap(dropped, dropped_);
  }
  Status result;
  if (dropped > 0)
    result = make_error(ErrorCode::unavailable, std::to_string(dropped) + " heartbeat observations dropped: more than " +
                                                    std::to_string(kMaxRecorded) + " were waiting");
  if (batch.empty()) return result;
  // Step windows first, then the finished runs' shapes (store reads), without holding mu_:
  // record() never waits behind a read.
  struct Finished {
    StepShape shape;
    double steady_s = 0;
    double elapsed_s = 0;
    int64_t steps = 0;
    int64_t job_id = 0;
    int64_t worker_id = 0;
  };
  std::vector<Finished> finished;
  auto note = [&result](int64_t job_id, int64_t worker_id, const Error& e) {
    if (result)
      result = make_error(e.code, "job " + std::to_string(job_id) + " on worker " + std::to_string(worker_id) + ": " +
                                      e.message, e.field);
  };
  for (const auto& r : batch) {
    if (!r.finished) {
      auto [at, added] = runs_.try_emplace(r.job_id);
      if (added || at->second.worker_id != r.worker_id || at->second.total_steps != r.total_steps)
        at->second = Run{r.worker_id, r.total_steps, r.start_step, {}};  // a new lease: a new run
      at->second.steady.add(r.step, r.step_ms);
      continue;
    }
    auto run = runs_.extract(r.job_id);
    if (run.empty() || run.mapped().worker_id != r.worker_id || run.mapped().start_step > 0) continue;
    const auto steady = run.mapped().steady.seconds();
    if (!steady) continue;
    auto shape = step_shape(r.job_id, r.worker_id, run.mapped().total_steps);
    if (!shape) {
      note(r.job_id, r.worker_id, shape.error());
      continue;
    }
    if (!*shape) continue;
    const int64_t steps = r.steps > 0 ? r.steps : static_cast<int64_t>(run.mapped().total_steps);
    finished.push_back(Finished{std::move(**shape), *steady, r.elapsed_s, steps, r.job_id, r.worker_id});
  }
  // Running jobs that never finish here (failed, cancelled, moved) leave with the next lease of
  // theirs; the map stays bounded all the same.
  if (runs_.size() > 100'000) runs_.clear();
  if (finished.empty()) return result;
  std::vector<store::CalibrationRecord> changed;
  const int64_t now = clock_.now_ms();
  {
    MutexLock lock(mu_);
    std::set<std::pair<std::string, std::string>> touched;
    for (const auto& f : finished) {
      // A worker's first runs count for little until it has a record (docs/cost-model.md).
      int64_t& runs_before = accepted_runs_[f.worker_id];
      const double weight = runs_before < kNewWorkerRuns ? kNewWorkerWeight : 1.0;
      Status st = calibrator_.observe_run(f.shape.device, f.shape.model_kind, f.shape.step_flops, f.steady_s,
                                          f.shape.peak_flops, f.elapsed_s, f.steps, weight);
      if (!st) {  // an implausible report changes nothing; the reason goes to the log
        note(f.job_id, f.worker_id, st.error());
        continue;
      }
      ++runs_before;
      touched.emplace(cost::calibration_device(f.shape.device), f.shape.model_kind);
    }
    if (accepted_runs_.size() > 100'000) accepted_runs_.clear();
    if (touched.empty()) return result;
    const json state = calibrator_.to_json();
    for (const auto& [device, kind] : touched)
      if (auto c = calibrator_.calibration(device, kind)) {
        json window;
        for (const auto& entry : state["entries"])
          if (entry["gpu"] == device && entry["model_kind"] == kind) window = entry;
        changed.push_back(store::CalibrationRecord{c->gpu_model, c->model_kind, std::log(c->efficiency), c->samples,
                                                   now, c->overhead_seconds, c->overhead_samples, std::move(window)});
      }
    snapshot_ = Snapshot{std::make_shared<const cost::EfficiencyCalibrator>(calibrator_), snapshot_.generation + 1};
  }
  // One change for the whole batch: a persisted figure lags the calibrator by at most one tick.
  if (auto written = store_.write([changed = std::move(changed)](store::WriteTxn& txn) -> Status {
        for (const auto& rec : changed)
          if (auto st = txn.put_calibration(rec); !st) return st;
        return {};
      });
      !written && result)
    result = written;
  return result;
}

HeartbeatCalibration::Snapshot HeartbeatCalibration::snapshot() const {
  MutexLock lock(mu_);
  return snapshot_;
}

std::vector<cost::Calibration> HeartbeatCalibration::calibrations() const {
  MutexLock lock(mu_);
  return calibrator_.all();
}

}  // namespace jobctl::daemon::placement
