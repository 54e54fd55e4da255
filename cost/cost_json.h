// JSON forms of the cost model's values, for the daemon's API, the CLI's `-o json` and stored
// state. nlohmann::json's ADL hooks (to_json) so `nlohmann::json j = report;` works; optional
// figures become null. Reading is explicit and validating (local_gpu_from_json).
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "base/expected.h"
#include "cost/breakeven.h"
#include "cost/gpu_specs.h"
#include "cost/local_gpu.h"
#include "cost/price_catalog.h"
#include "cost/spot_risk.h"
#include "cost/vram_estimate.h"

namespace jobctl::cost {

void to_json(nlohmann::json& j, const GpuSpec& g);
void to_json(nlohmann::json& j, const Offer& o);
void to_json(nlohmann::json& j, const LocalGpuInventory& g);
void to_json(nlohmann::json& j, const BreakevenFigures& f);
void to_json(nlohmann::json& j, const BreakevenPoint& p);
void to_json(nlohmann::json& j, const BreakevenReport& r);
void to_json(nlohmann::json& j, const SpotRunEstimate& e);
void to_json(nlohmann::json& j, const VramEstimate& v);

// Reads one inventory entry ({"gpu_model": "V100", "count": 4, "purchase_usd": 2000, ...}; the
// keys are the struct's field names, every one but gpu_model optional with the struct's default).
// Unknown keys and wrong types are errors naming the field; the result is validated.
[[nodiscard]] Expected<LocalGpuInventory> local_gpu_from_json(const nlohmann::json& j);

}  // namespace jobctl::cost
