#include "cli/spec_builder.h"

#include <charconv>
#include <cmath>
#include <string_view>

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

namespace {

Status one_of(const std::optional<std::string>& value, const std::string& flag,
              std::initializer_list<std::string_view> allowed) {
  if (!value) return ok_status();
  std::string list;
  for (auto a : allowed) {
    if (*value == a) return ok_status();
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  return make_error(ErrorCode::invalid_argument, flag + " must be one of " + list + " (got '" + *value + "')", flag);
}

Status positive(const std::optional<double>& value, const std::string& flag) {
  if (!value || (std::isfinite(*value) && *value > 0)) return ok_status();
  return make_error(ErrorCode::invalid_argument, flag + " must be a number > 0", flag);
}

}  // namespace

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
  if (f.gpus) {
    if (*f.gpus < 1) return make_error(ErrorCode::invalid_argument, "--gpus must be at least 1", "--gpus");
    section("resources")["gpus"] = *f.gpus;
  }
  if (f.nodes) {
    if (*f.nodes < 1) return make_error(ErrorCode::invalid_argument, "--nodes must be at least 1", "--nodes");
    section("resources")["nodes"] = *f.nodes;
  }
  if (f.on_node_loss) {  // its values are the spec's to check (a 400 naming resources.on_node_loss)
    section("resources")["on_node_loss"] = *f.on_node_loss;
  }
  if (f.priority) spec["priority"] = *f.priority;
  if (!f.after.empty()) {  // jobctld checks that each exists; here, only the form (the message names the flag)
    json after = json::array();
    for (const std::string& a : f.after) {
      const bool array = a.size() > 1 && a[0] == 'a';
      const std::string digits = array ? a.substr(1) : a;
      if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos)
        return make_error(ErrorCode::invalid_argument, "--after " + a + ": a job ID (12) or an array ID (a14)", "--after");
      after.push_back(array ? json(a) : json(std::stoll(digits)));
    }
    spec["after"] = std::move(after);
  }

  if (auto st = one_of(f.mode, "--mode", {"auto", "local", "cloud"}); !st) return st.error();
  if (auto st = one_of(f.spot, "--spot", {"auto", "always", "never"}); !st) return st.error();
  if (auto st = positive(f.deadline_hours, "--deadline-hours"); !st) return st.error();
  if (auto st = positive(f.max_usd_per_hour, "--max-usd-per-hour"); !st) return st.error();
  if (auto st = positive(f.estimate_hours, "--estimate-hours"); !st) return st.error();
  if (f.mode) section("placement")["mode"] = *f.mode;
  if (f.spot) section("placement")["spot"] = *f.spot;
  if (f.deadline_hours) section("placement")["deadline_hours"] = *f.deadline_hours;
  if (f.max_usd_per_hour) section("placement")["max_usd_per_hour"] = *f.max_usd_per_hour;

  for (const std::string& setting : f.env) {
    const size_t eq = setting.find('=');
    if (eq == std::string::npos || eq == 0)
      return make_error(ErrorCode::invalid_argument, "--env takes NAME=VALUE (got '" + setting + "')", "--env");
    section("env")[setting.substr(0, eq)] = setting.substr(eq + 1);
  }
  if (!f.setup.empty()) {
    for (const std::string& command : f.setup)
      if (command.empty()) return make_error(ErrorCode::invalid_argument, "--setup takes a command (got '')", "--setup");
    spec["setup"] = f.setup;
  }
  if (f.estimate_hours) section("estimate")["hours"] = *f.estimate_hours;
  // A container image (docs/job-spec.md, "Images"): the reference, its pull policy and its
  // mounts are jobctld's to check; here only the form of --mount and the closed set of --image-pull.
  if (auto st = one_of(f.image_pull, "--image-pull", {"if_missing", "always", "never"}); !st) return st.error();
  if (f.image) spec["image"] = *f.image;
  if (f.image_pull) spec["image_pull"] = *f.image_pull;
  if (!f.mounts.empty()) {
    json mounts = json::array();
    for (const std::string& m : f.mounts) {
      auto mount = parse_mount_flag(m);
      if (!mount) return mount.error();
      mounts.push_back(std::move(*mount));
    }
    spec["mounts"] = std::move(mounts);
  }
  return spec;
}

Expected<json> parse_mount_flag(const std::string& text) {
  auto bad = [&text] {
    return make_error(ErrorCode::invalid_argument,
                      "--mount takes SOURCE:TARGET or SOURCE:TARGET:rw, absolute paths (got '" + text + "')", "--mount");
  };
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() || parts[1].empty()) return bad();
  json mount{{"source", parts[0]}, {"target", parts[1]}};
  if (parts.size() == 3) {
    if (parts[2] == "rw") mount["writable"] = true;
    else if (parts[2] != "ro") return bad();
  }
  return mount;
}

}  // namespace jobctl::cli
