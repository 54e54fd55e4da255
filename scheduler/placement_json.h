// The placement decision and its candidate table as JSON — what `GET /v1/jobs/{id}`, `POST
// /v1/quote`, `jobctl quote` and `jobctl show` print:
//   {"outcome": "launch_spot", "reason_code": "cheapest_meeting_deadline", "reason": "...",
//    "deadline_left_hours": 6.0 | null, "chosen": {row} | null,
//    "candidates": [{"option", "kind", "gpu", "usd_per_hour", "queue_wait_hours",
//                    "estimated_hours", "estimated_cost_usd", "completion_hours",
//                    "meets_deadline", "chosen", "rejection", "rejection_reason"}, ...]}
// A rejected row keeps its figures where they could be computed (price, estimate) so people see
// what a cap or a memory limit cost them.
//
// Thread safety: pure function.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "scheduler/placement.h"

namespace jobctl::scheduler {

nlohmann::json candidate_json(const Candidate& c, const Job& job, const PlacementContext& ctx,
                              const LocalCapacity& capacity);

nlohmann::json placement_json(const PlacementDecision& d, const std::vector<Candidate>& table, const Job& job,
                              const PlacementContext& ctx, const LocalCapacity& capacity);

}  // namespace jobctl::scheduler
