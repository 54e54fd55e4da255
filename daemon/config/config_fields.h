// Reading jobctld's JSON configuration strictly: every section checks its keys against the ones
// it knows and every value its type, and an error names the key in full ("cloud.exec.launch"),
// so that a typo in a configuration file is refused at start instead of silently ignored.
// Used by daemon/config.cpp and by each service's own section (placement_config.cpp,
// auth_options.cpp, cloud_config.cpp). A folder of its own, below every section: daemon/config.cpp
// composes the sections, so the readers they share cannot live beside it without a cycle
// (docs/architecture.md, "Folders and the direction of dependencies").
//
// `prefix` is the section's path ("" at the top level); a value's field is prefix + "." + key.
// An absent key leaves `out` unchanged (the default stands).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "base/expected.h"
#include "train/spec/allowed_mounts.h"

namespace jobctl::daemon::config_fields {

// An invalid_argument error "FIELD WHAT" naming FIELD.
Error bad(const std::string& field, const std::string& what);
// The full name of `key` in the section `prefix`.
std::string field_name(const std::string& prefix, std::string_view key);

// `obj` must be an object whose keys are all in `keys`.
Status only(const nlohmann::json& obj, std::initializer_list<std::string_view> keys, const std::string& prefix);

Status read_bool(const nlohmann::json& obj, const char* key, const std::string& prefix, bool& out);
Status read_number(const nlohmann::json& obj, const char* key, const std::string& prefix, double& out);
Status read_string(const nlohmann::json& obj, const char* key, const std::string& prefix, std::string& out);
Status read_int(const nlohmann::json& obj, const char* key, const std::string& prefix, int64_t& out);
Status read_int(const nlohmann::json& obj, const char* key, const std::string& prefix, int& out);

// A section's "containers" ("podman": the workers jobctld starts run jobs in an image; absent:
// they do not) and "allowed_mounts" (["PREFIX", "PREFIX:rw", ...]: the host folders those jobs
// may mount; only with containers).
Status read_container_support(const nlohmann::json& obj, const std::string& prefix, train::ContainerSupport& out);

}  // namespace jobctl::daemon::config_fields
