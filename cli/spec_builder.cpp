#include "cli/spec_builder.h"

#include <charconv>

#include "cost/gpu_specs.h"

namespace jobctl::cli {

using nlohmann::json;

Expected<std::vector<int>> parse_int_list(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    std::string item = text.substr(i, j - i);
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    int v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      return make_error(ErrorCode::invalid_argument,
                        flag + " must be a comma-separated list of integers (got '" + text + "')", flag);
    out.push_back(v);
    i = j + 1;
  }
  return out;
}

Expected<json> build_spec(json spec, const SpecFlags& f) {
  if (spec.is_null()) spec = json::object();
  if (!spec.is_object()) return make_error(ErrorCode::invalid_argument, "the spec must be a JSON object", "spec");
  auto section = [&spec](const char* key) -> json& {
    if (!spec.contains(key) || !spec[key].is_object()) spec[key] = json::object();
    return spec[key];
  };
  // A command job (docs/job-spec.md, "Command jobs") has no model or data to default.
  const bool command_job = spec.contains("command");
  if (!command_job && !spec.contains("model") && !f.model) section("model")["kind"] = "mlp";
  if (!command_job && !spec.contains("data") && !f.dataset) section("data")["dataset"] = "fashion-mnist";

  if (f.name) spec["name"] = *f.name;
  if (f.model) section("model")["kind"] = *f.model;
  if (f.hidden) {
    auto v = parse_int_list(*f.hidden, "--hidden");
    if (!v) return v.error();
    section("model")["hidden"] = *v;
  }
  if (f.channels) {
    auto v = parse_int_list(*f.channels, "--channels");
    if (!v) return v.error();
    section("model")["channels"] = *v;
  }
  if (f.activation) section("model")["activation"] = *f.activation;
  if (f.dataset) section("data")["dataset"] = *f.dataset;
  if (f.data_path) section("data")["path"] = *f.data_path;
  if (f.samples) section("data")["samples"] = *f.samples;
  if (f.epochs) section("train")["epochs"] = *f.epochs;
  if (f.batch_size) section("train")["batch_size"] = *f.batch_size;
  if (f.lr) section("train")["lr"] = *f.lr;
  if (f.optimizer) section("train")["optimizer"] = *f.optimizer;
  if (f.schedule) section("train")["schedule"] = *f.schedule;
  if (f.seed) section("train")["seed"] = *f.seed;
  if (f.gpu) {
    // Checked here too, so that the message names the flag (jobctld checks it again).
    auto gpu = cost::parse_gpu_request(*f.gpu);
    if (!gpu) return make_error(ErrorCode::invalid_argument, "--gpu: " + gpu.error().message, "--gpu");
    section("resources")["gpu"] = *f.gpu;
  }
  if (f.gpus) section("resources")["gpus"] = *f.gpus;
  if (f.priority) spec["priority"] = *f.priority;
  return spec;
}

}  // namespace jobctl::cli
