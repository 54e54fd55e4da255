#include "scheduler/placement_json.h"

namespace jobctl::scheduler {

nlohmann::json candidate_json(const Candidate& c, const Job& job, const PlacementContext& ctx,
                              const LocalCapacity& capacity) {
  return {{"option", option_label(c, ctx, capacity)},
          {"kind", to_string(c.kind)},
          {"gpu", gpu_label(c, ctx, capacity)},
          {"usd_per_hour", c.usd_per_hour},
          {"queue_wait_hours", c.queue_wait_hours},
          {"estimated_hours", c.estimated_hours},
          {"estimated_cost_usd", c.estimated_cost_usd},
          {"completion_hours", c.completion_hours},
          {"meets_deadline", c.meets_deadline},
          {"chosen", c.chosen},
          {"rejection", c.rejection == Rejection::none ? nlohmann::json(nullptr) : nlohmann::json(to_string(c.rejection))},
          {"rejection_reason", c.rejection == Rejection::none ? nlohmann::json(nullptr)
                                                              : nlohmann::json(rejection_text(c, job, ctx, capacity))}};
}

nlohmann::json placement_json(const PlacementDecision& d, const std::vector<Candidate>& table, const Job& job,
                              const PlacementContext& ctx, const LocalCapacity& capacity) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : table) rows.push_back(candidate_json(c, job, ctx, capacity));
  return {{"outcome", to_string(d.outcome)},
          {"reason_code", to_string(d.reason_code)},
          {"reason", decision_reason(d, job, ctx, capacity)},
          {"deadline_left_hours", d.deadline_left_hours ? nlohmann::json(*d.deadline_left_hours) : nlohmann::json(nullptr)},
          {"considered", d.considered},
          {"fitting", d.fitting},
          {"meeting_deadline", d.meeting_deadline},
          {"chosen", d.outcome == Outcome::unplaceable ? nlohmann::json(nullptr) : candidate_json(d.choice, job, ctx, capacity)},
          {"candidates", rows}};
}

}  // namespace jobctl::scheduler
