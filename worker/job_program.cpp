#include "worker/job_program.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/array_variables.h"

namespace jobctl::worker {

using nlohmann::json;
namespace fs = std::filesystem;

Expected<JobProgram> program_for(const std::string& spec_json, const fs::path& spec_path, const RunnerOptions& options) {
  const fs::path dir = spec_path.parent_path();
  JobProgram p;
  json spec = json::parse(spec_json, nullptr, false);
  if (spec.is_discarded() || !spec.is_object())
    return make_error(ErrorCode::invalid_argument, "the lease's spec is not a JSON object", "spec");
  p.grace_ms = options.kill_grace_ms;
  if (auto ck = spec.find("checkpoint"); ck != spec.end() && ck->is_object()) {
    auto g = ck->find("grace_s");
    if (g != ck->end() && g->is_number() && g->get<double>() > 0)
      p.grace_ms = static_cast<int>(std::min(3600.0, g->get<double>()) * 1000);
  }
  if (auto mem = spec.find("resources"); mem != spec.end() && mem->is_object()) {
    auto mb = mem->find("memory_mb");
    if (mb != mem->end() && mb->is_number_integer() && mb->get<int64_t>() > 0)
      p.memory_limit_bytes = static_cast<uint64_t>(mb->get<int64_t>()) * 1024 * 1024;
  }
  auto command = spec.find("command");
  if (command == spec.end() || command->is_null()) {
    // A built-in model: jobctl-train, which speaks the same protocol (its --out and --resume come
    // from JOBCTL_CHECKPOINT_DIR and JOBCTL_RESUME_FROM).
    p.label = "jobctl-train";
    p.cwd = dir;
    p.argv = {options.trainer, "--spec", spec_path.string(), "--device", options.device,
              "--log-every", std::to_string(std::max(1, options.log_every))};
    if (!options.data_dir.empty()) {
      p.argv.push_back("--data-dir");
      p.argv.push_back(options.data_dir);
    }
    if (options.threads > 0) {
      p.argv.push_back("--threads");
      p.argv.push_back(std::to_string(options.threads));
    }
    return p;
  }
  if (!options.allow_commands)
    return make_error(ErrorCode::permission_denied,
                      "this worker does not run command jobs (it was started without --allow-commands)", "command");
  if (!command->is_array() || command->empty())
    return make_error(ErrorCode::invalid_argument, "command must be a non-empty array of strings", "command");
  for (const auto& a : *command) {
    if (!a.is_string()) return make_error(ErrorCode::invalid_argument, "command must be an array of strings", "command");
    p.argv.push_back(a.get<std::string>());
  }
  if (auto env = spec.find("env"); env != spec.end() && env->is_object())
    for (const auto& [k, v] : env->items())
      if (v.is_string()) p.env.push_back(k + "=" + v.get<std::string>());
  // A sweep's case: its index and its parameters (base/array_variables.h).
  if (auto array = spec.find("array"); array != spec.end() && array->is_object()) {
    if (auto index = array->find("index"); index != array->end() && index->is_number_integer())
      p.env.push_back(std::string(kArrayIndexVariable) + "=" + std::to_string(index->get<int64_t>()));
    if (auto params = array->find("parameters"); params != array->end() && params->is_object())
      for (const auto& [k, v] : params->items())
        if (v.is_string()) p.env.push_back(array_parameter_variable(k) + "=" + v.get<std::string>());
  }
  p.command = true;
  if (auto b = spec.find("bundle"); b != spec.end() && b->is_string()) p.bundle = b->get<std::string>();
  if (auto s = spec.find("setup"); s != spec.end() && s->is_array())
    for (const auto& c : *s)
      if (c.is_string()) p.setup.push_back(c.get<std::string>());
  if (auto image = spec.find("image"); image != spec.end() && image->is_string()) {
    if (!options.containers)
      return make_error(ErrorCode::permission_denied,
                        "this worker runs no job in an image (it was started without --container-runtime)", "image");
    p.image = image->get<std::string>();
    if (auto pull = spec.find("image_pull"); pull != spec.end() && pull->is_string())
      for (auto mode : {train::ImagePull::if_missing, train::ImagePull::always, train::ImagePull::never})
        if (train::image_pull_name(mode) == pull->get<std::string>()) p.image_pull = mode;
    if (auto mounts = spec.find("mounts"); mounts != spec.end() && mounts->is_array())
      for (const auto& m : *mounts) {
        if (!m.is_object() || !m.contains("source") || !m.contains("target") || !m["source"].is_string() ||
            !m["target"].is_string())
          return make_error(ErrorCode::invalid_argument, "mounts must be {source, target, writable} objects", "mounts");
        {
          const auto w = m.find("writable");
          p.mounts.push_back({m["source"].get<std::string>(), m["target"].get<std::string>(),
                              w != m.end() && w->is_boolean() && w->get<bool>()});
        }
      }
  }
  p.label = p.argv.front();
  p.cwd = dir / "work";
  return p;
}

}  // namespace jobctl::worker
