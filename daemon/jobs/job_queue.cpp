#include "daemon/jobs/job_queue.h"

#include <nlohmann/json.hpp>

namespace jobctl::daemon::jobs {

void set_placement_fields(const store::JobRow& row, QueuedJob& q) {
  if (!row.chosen_json) return;
  const auto c = nlohmann::json::parse(*row.chosen_json, nullptr, false);
  if (!c.is_object()) return;
  auto text = [&](const char* key) {  // null (e.g. a local option's instance_type) reads as ""
    auto it = c.find(key);
    return it != c.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  q.placement_option = text("option");
  q.placement_gpu = text("gpu");
  q.placement_instance_type = text("instance_type");
}

bool is_command_spec(const std::string& spec_json) {
  const auto spec = nlohmann::json::parse(spec_json, nullptr, false);
  return spec.is_object() && spec.contains("command") && !spec["command"].is_null();
}

bool worker_takes_kind(const QueuedJob& job, const WorkerCapabilities& worker) {
  return !job.command || worker.commands;
}

}  // namespace jobctl::daemon::jobs
