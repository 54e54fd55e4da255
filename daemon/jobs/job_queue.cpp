#include "daemon/jobs/job_queue.h"

#include <nlohmann/json.hpp>

namespace jobctl::daemon::jobs {

void set_placement_fields(const store::JobRow& row, QueuedJob& q) {
  if (!row.chosen) return;
  q.placement_option = row.chosen->option;
  q.placement_gpu = row.chosen->gpu;
  q.placement_instance_type = row.chosen->instance_type;
}

bool is_command_spec(const std::string& spec_json) {
  const auto spec = nlohmann::json::parse(spec_json, nullptr, false);
  return spec.is_object() && spec.contains("command") && !spec["command"].is_null();
}

bool worker_takes_kind(const QueuedJob& job, const WorkerCapabilities& worker) {
  return !job.command || worker.commands;
}

}  // namespace jobctl::daemon::jobs
