#include "daemon/placement/heartbeat_calibration.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "cost/workload.h"
#include "daemon/jobs/worker_capabilities.h"
#include "daemon/placement/placement_matcher.h"
#include "train/spec/job_spec.h"
#include "train/spec/model_stats.h"

namespace jobctl::daemon::placement {

using nlohmann::json;

namespace {

double number(const json& p, const char* key) {
  auto it = p.find(key);
  return it != p.end() && it->is_number() ? it->get<double>() : 0.0;
}

}  // namespace

HeartbeatCalibration::HeartbeatCalibration(store::Store& store, const Clock& clock) : store_(store), clock_(clock) {
  snapshot_ = Snapshot{std::make_shared<const cost::EfficiencyCalibrator>(), 1};
}

Status HeartbeatCalibration::load() {
  auto rows = store_.calibrations();
  if (!rows) return rows.error();
  json entries = json::array();
  for (const auto& c : *rows)
    entries.push_back({{"gpu", c.gpu_model}, {"model_kind", c.model_kind}, {"log_efficiency", c.log_efficiency},
                       {"efficiency", std::exp(c.log_efficiency)}, {"samples", c.samples}});
  auto calibrator = cost::EfficiencyCalibrator::from_json(json{{"version", 1}, {"entries", entries}});
  if (!calibrator) return calibrator.error();
  MutexLock lock(mu_);
  calibrator_ = std::move(*calibrator);
  snapshot_ = Snapshot{std::make_shared<const cost::EfficiencyCalibrator>(calibrator_), snapshot_.generation + 1};
  return {};
}

bool HeartbeatCalibration::record(int64_t job_id, int64_t worker_id, const std::string& progress_json) {
  const json p = json::parse(progress_json, nullptr, false);
  if (!p.is_object()) return false;
  const double step_ms = number(p, "step_ms"), total_steps = number(p, "total_steps");
  if (!(step_ms > 0) || !(total_steps > 0)) return false;
  MutexLock lock(mu_);
  if (recorded_.size() >= kMaxRecorded) {
    ++dropped_;
    return false;
  }
  recorded_.push_back(Observation{job_id, worker_id, step_ms, total_steps});
  return recorded_.size() == 1;
}

Expected<std::optional<HeartbeatCalibration::StepShape>> HeartbeatCalibration::step_shape(const Observation& o) {
  auto it = shapes_.find(o.job_id);
  if (it != shapes_.end() && it->second.worker_id == o.worker_id && it->second.total_steps == o.total_steps)
    return std::optional<StepShape>(it->second);
  auto job = store_.get_job(o.job_id);
  if (!job) return job.error();
  auto worker = store_.get_worker(o.worker_id);
  if (!worker) return worker.error();
  if (!*job || !*worker) return std::optional<StepShape>{};  // gone meanwhile
  auto spec = train::parse_job_spec((*job)->spec_json);
  auto caps = jobs::capabilities_from_json(json::parse((*worker)->capabilities_json, nullptr, false), "capabilities");
  if (!spec || !caps) return std::optional<StepShape>{};
  // A simulated worker (fake GPUs, or a simulated cloud's instance) trains on the CPU whatever it
  // claims: its step times say nothing about the GPU it names, and must never calibrate it.
  if (caps->simulated) return std::optional<StepShape>{};
  const train::ModelStats stats = train::model_stats(*spec);
  const cost::Workload w = cost::workload_from_spec(*spec, stats);
  StepShape shape;
  shape.worker_id = o.worker_id;
  shape.total_steps = o.total_steps;
  shape.step_flops = w.training_flops / o.total_steps;
  shape.gpu = worker_gpu_model(*caps);
  shape.model_kind = w.model_kind;
  shape.precision = w.precision;
  shape.gpus = caps->gpus.empty()
                   ? 1
                   : std::min<int>(std::max(spec->resources.gpus, 1), static_cast<int>(caps->gpus.size()));
  if (shapes_.size() > 100'000) shapes_.clear();  // bounded: a cache of running jobs
  shapes_[o.job_id] = shape;
  return std::optional<StepShape>(std::move(shape));
}

Status HeartbeatCalibration::apply_recorded() {
  MutexLock apply(apply_mu_);
  std::vector<Observation> batch;
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
  // Shapes first (store reads), without holding mu_: record() never waits behind a read.
  std::vector<std::pair<Observation, StepShape>> shaped;
  shaped.reserve(batch.size());
  for (const auto& o : batch) {
    auto shape = step_shape(o);
    if (!shape) {
      if (result) result = make_error(shape.error().code, "job " + std::to_string(o.job_id) + ": " + shape.error().message);
      continue;
    }
    if (*shape) shaped.emplace_back(o, std::move(**shape));
  }
  std::vector<store::CalibrationRecord> changed;
  const int64_t now = clock_.now_ms();
  {
    MutexLock lock(mu_);
    std::set<std::pair<std::string, std::string>> touched;
    for (const auto& [o, s] : shaped)
      if (calibrator_.observe(s.gpu, s.model_kind, s.step_flops, o.step_ms / 1000.0, s.gpus, s.precision))
        touched.emplace(s.gpu, s.model_kind);
    if (touched.empty()) return result;
    for (const auto& [gpu, kind] : touched)
      if (auto c = calibrator_.calibration(gpu, kind))
        changed.push_back(store::CalibrationRecord{c->gpu_model, c->model_kind, std::log(c->efficiency), c->samples, now});
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
