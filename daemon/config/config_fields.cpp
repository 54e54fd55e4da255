#include "daemon/config/config_fields.h"

#include <limits>

#include <nlohmann/json.hpp>

namespace jobctl::daemon::config_fields {

using nlohmann::json;

Error bad(const std::string& field, const std::string& what) {
  return make_error(ErrorCode::invalid_argument, field + " " + what, field);
}

std::string field_name(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

Status only(const json& obj, std::initializer_list<std::string_view> keys, const std::string& prefix) {
  if (!obj.is_object()) return bad(prefix.empty() ? "configuration" : prefix, "must be an object");
  for (const auto& item : obj.items()) {
    bool known = false;
    for (auto k : keys) known = known || item.key() == k;
    if (!known) {
      const std::string f = field_name(prefix, item.key());
      return make_error(ErrorCode::invalid_argument, "unknown configuration key " + f, f);
    }
  }
  return {};
}

Status read_bool(const json& obj, const char* key, const std::string& prefix, bool& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return {};
  if (!it->is_boolean()) return bad(field_name(prefix, key), "must be true or false");
  out = it->get<bool>();
  return {};
}

Status read_number(const json& obj, const char* key, const std::string& prefix, double& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return {};
  if (!it->is_number()) return bad(field_name(prefix, key), "must be a number");
  out = it->get<double>();
  return {};
}

Status read_string(const json& obj, const char* key, const std::string& prefix, std::string& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return {};
  if (!it->is_string()) return bad(field_name(prefix, key), "must be a string");
  out = it->get<std::string>();
  return {};
}

Status read_int(const json& obj, const char* key, const std::string& prefix, int64_t& out) {
  auto it = obj.find(key);
  if (it == obj.end()) return {};
  if (!it->is_number_integer()) return bad(field_name(prefix, key), "must be an integer");
  out = it->get<int64_t>();
  return {};
}

Status read_int(const json& obj, const char* key, const std::string& prefix, int& out) {
  int64_t v = out;
  if (auto st = read_int(obj, key, prefix, v); !st) return st;
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    return bad(field_name(prefix, key), "is out of range");
  out = static_cast<int>(v);
  return {};
}

Status read_container_support(const nlohmann::json& obj, const std::string& prefix, train::ContainerSupport& out) {
  std::string runtime;
  if (auto st = read_string(obj, "containers", prefix, runtime); !st) return st;
  if (!runtime.empty() && runtime != "podman")
    return bad(field_name(prefix, "containers"), "must be \"podman\" (the only container runtime so far) or absent");
  out.runs_images = runtime == "podman";
  auto it = obj.find("allowed_mounts");
  if (it == obj.end()) return {};
  const std::string field = field_name(prefix, "allowed_mounts");
  if (!out.runs_images) return bad(field, "needs containers (\"podman\"): mounts are for jobs in an image");
  if (!it->is_array() || it->size() > 64) return bad(field, "must be an array of at most 64 \"PREFIX\" or \"PREFIX:rw\" strings");
  out.mounts.clear();
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string at = field + "[" + std::to_string(i) + "]";
    if (!(*it)[i].is_string()) return bad(at, "must be a string such as \"/srv/datasets\" or \"/scratch:rw\"");
    auto m = train::parse_allowed_mount((*it)[i].get<std::string>(), at);
    if (!m) return m.error();
    out.mounts.push_back(std::move(*m));
  }
  return {};
}

}  // namespace jobctl::daemon::config_fields
