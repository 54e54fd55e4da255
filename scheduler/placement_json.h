// The placement document: a decision and its candidate table as JSON. It is what a job's
// `placement` (GET /v1/jobs/{id}), POST /v1/quote, `jobctl quote` and `jobctl show` carry; the
// contract (every key, its type and meaning) is docs/api.md, "The placement document". This is
// the only code that builds it.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scheduler/placement.h"

namespace jobctl::scheduler {

// What the document says beyond the decision itself.
struct PlacementDocumentInfo {
  std::string cloud_provider;     // a cloud row's "provider" ("" : null)
  int64_t decided_ms = 0;         // when the decision was taken
  double remaining_fraction = 1;  // the part of the job's work the estimates are for
};

// The whole document: "chosen" (the chosen row without its "chosen" flag, or null), "candidates"
// (one row per candidate: "option": local | on_demand | spot, "label", where, price, estimates,
// "chosen", and for a rejected row "rejection" and "rejected"),
// "reason", "decided_ms", "outcome", "reason_code", "deadline_left_hours", "remaining_fraction",
// "considered", "fitting", "meeting_deadline" and "deadline_policy" (null here: the daemon fills
// it when a deadline policy took part).
nlohmann::json placement_json(const PlacementDecision& d, const std::vector<Candidate>& table, const Job& job,
                              const PlacementContext& ctx, const LocalCapacity& capacity,
                              const PlacementDocumentInfo& info);

}  // namespace jobctl::scheduler
