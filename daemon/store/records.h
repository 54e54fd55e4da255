// The rows the store keeps, as plain values. JSON columns are carried as JSON text: the store
// neither parses nor builds JSON (the service and the HTTP layer do).
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/job_state.h"

namespace jobctl::daemon::store {

using scheduler::JobState;

struct JobRow {
  int64_t id = 0;                 // assigned by the store on insert
  std::string name;
  std::string spec_json;          // canonical (train::to_json)
  JobState state = JobState::queued;
  int priority = 50;
  std::string resource_gpu = "any";
  int resource_gpus = 1;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
  std::optional<int64_t> worker_id;
  int64_t lease_epoch = 0;
  std::optional<int64_t> lease_expires_ms;
  std::optional<std::string> progress_json;
  std::optional<std::string> result_json;
  std::optional<std::string> error;
  int recoveries = 0;
  std::optional<std::string> placement_json;
};

struct JobEventRow {
  int64_t job_id = 0;
  int64_t seq = 0;                // assigned by the store: 1, 2, 3, ... per job
  int64_t time_ms = 0;
  std::string type;               // "submitted", "leased", "started", "succeeded", ...
  std::optional<JobState> from_state;
  std::optional<JobState> to_state;
  std::string detail_json = "{}";
};

struct WorkerRow {
  int64_t id = 0;                 // assigned by the store on insert
  std::string name;
  std::string capabilities_json;
  int64_t registered_ms = 0;
  int64_t last_seen_ms = 0;
  std::string state = "active";   // active | lost | gone
};

// A listing query: jobs in id order after `after_id`, optionally of one state.
struct JobQuery {
  std::optional<JobState> state;
  int64_t after_id = 0;
  int limit = 100;
};

// What a queued job needs for matching, without its spec.
struct QueuedJobRow {
  int64_t id = 0;
  int priority = 50;
  int64_t created_ms = 0;
  std::string resource_gpu;
  int resource_gpus = 1;
};

}  // namespace jobctl::daemon::store
