// A queued job as the scheduler sees it: who it is, how urgent, what it needs, what it may cost.
// Built from the job spec (job_from_spec) once at submission; placement then never touches the
// spec or the model again.
//
// Thread safety: plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cost/workload.h"
#include "train/spec/job_spec.h"
#include "train/spec/model_stats.h"

namespace jobctl::scheduler {

struct Job {
  std::string id;
  int priority = 50;                   // 0..100, higher first
  int64_t submitted_ms = 0;            // Clock time of submission; the deadline counts from here
  std::string gpu = "any";             // a GPU request (cost::parse_gpu_request): "any", "cpu", "A100", "A100-80GB", ...
  cost::Workload workload;
  train::PlacementMode mode = train::PlacementMode::auto_;
  train::SpotMode spot = train::SpotMode::auto_;
  std::optional<double> max_usd_per_hour;
  std::optional<double> deadline_hours;  // from submission
  // The user's own program (a command job): it runs only where a worker runs command jobs.
  bool command = false;
  // A job in an image: it runs only where a worker runs containers and allows its mounts.
  bool image = false;
  std::vector<train::MountSpec> mounts;
  int nodes = 1;  // machines it runs on at once (resources.nodes): a gang, priced and placed as a whole
};

// The scheduler's view of a validated spec. `stats` is train::model_stats(spec).
Job job_from_spec(std::string id, const train::JobSpec& spec, const train::ModelStats& stats,
                  int64_t submitted_ms);

}  // namespace jobctl::scheduler
