#include "daemon/placement/command_runtime_history.h"

#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/readable.h"
#include "cost/gpu_specs.h"
#include "daemon/jobs/worker_capabilities.h"
#include "daemon/placement/placement_matcher.h"

namespace jobctl::daemon::placement {

Expected<std::optional<CommandRuntime>> CommandRuntimeHistory::lookup(const train::JobSpec& spec) {
  std::string key = spec.name;
  for (const std::string& arg : spec.command) key += std::string(1, '\0') + arg;
  {
    MutexLock lock(mu_);
    if (auto it = cached_.find(key); it != cached_.end()) return it->second;
  }
  auto runs = store_.finished_runs_keyed(spec.name, train::to_json(spec), kRunsRead);
  if (!runs) return runs.error();
  // Whole runs only, by the GPU model of the worker that ran them.
  std::map<std::string, std::vector<double>> hours_by_gpu;
  std::map<int64_t, std::string> gpu_of_worker;
  for (const auto& run : *runs) {
    if (run.runs != 1 || run.succeeded_ms <= run.started_ms) continue;
    auto known = gpu_of_worker.find(run.worker_id);
    if (known == gpu_of_worker.end()) {
      std::string gpu;
      auto worker = store_.get_worker(run.worker_id);
      if (!worker) return worker.error();
      if (*worker) {
        const jobs::WorkerCapabilities* caps = &(*worker)->capabilities;
        if (!caps->gpus.empty()) {
          const std::string device = worker_device(*caps);
          if (cost::find_gpu(device)) gpu = device;  // a CPU machine or an unknown GPU: no hint to scale
        }
      }
      known = gpu_of_worker.emplace(run.worker_id, gpu).first;
    }
    if (!known->second.empty())
      hours_by_gpu[known->second].push_back(static_cast<double>(run.succeeded_ms - run.started_ms) / 3.6e6);
  }
  std::optional<CommandRuntime> out;
  for (auto& [gpu, hours] : hours_by_gpu) {
    if (out && static_cast<int>(hours.size()) <= out->runs) continue;  // the GPU most runs were on
    std::sort(hours.begin(), hours.end());
    const size_t n = hours.size();
    const double median = n % 2 ? hours[n / 2] : (hours[n / 2 - 1] + hours[n / 2]) / 2;
    out = CommandRuntime{median, gpu, static_cast<int>(n)};
  }
  MutexLock lock(mu_);
  cached_[key] = out;
  return out;
}

void CommandRuntimeHistory::forget() {
  MutexLock lock(mu_);
  cached_.clear();
}

std::string command_runtime_note(const std::string& name, const CommandRuntime& runtime) {
  return "runtime from " + std::to_string(runtime.runs) + " earlier run" + (runtime.runs == 1 ? "" : "s") + " of " +
         name + " on " + runtime.gpu + " (median " + readable::duration_hours(runtime.hours) + "), scaled by GPU speed";
}

}  // namespace jobctl::daemon::placement
