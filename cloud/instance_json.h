// The JSON form of instances, offers and interruption notices: the wire format of jobctl-cloudsim's API
// and of the exec driver's command output (docs/clouds.md), and what GET /v1/instances embeds.
//
// Reading is lenient where real clouds differ and strict where a mistake would leak money:
// "id" is required and must be a non-empty string; "spot" may be a boolean or EC2's
// InstanceLifecycle string ("spot", or null/absent for on demand); times are milliseconds since
// the epoch; unknown keys are ignored (a cloud CLI prints more than we need).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/expected.h"
#include "cloud/provider.h"

namespace jobctl::cloud {

nlohmann::json to_json(const Instance& instance);
nlohmann::json to_json(const InterruptionNotice& notice);

// Errors: invalid_argument naming "<field_prefix>.<key>".
Expected<Instance> instance_from_json(const nlohmann::json& j, const std::string& field_prefix);
Expected<InterruptionNotice> notice_from_json(const nlohmann::json& j, const std::string& field_prefix);

// Either a JSON array of instances or an object {"instances": [...]}.
Expected<std::vector<Instance>> instances_from_json(const nlohmann::json& j,
                                                    const std::string& field_prefix);

// Offers as cloudsim's GET /offers lists them (and back).
nlohmann::json offer_to_json(const cost::Offer& offer);
Expected<cost::Offer> offer_from_json(const nlohmann::json& j, const std::string& field_prefix);

// "2026-11-22T08:15:03Z" (UTC, whole seconds): the time format of EC2's instance-action notice.
std::string rfc3339_utc(int64_t ms);

}  // namespace jobctl::cloud
