#include "scheduler/simulation_json.h"

namespace jobctl::scheduler {

nlohmann::json simulation_json(const SimulationResult& r, bool with_segments) {
  nlohmann::json j = {{"policy", r.policy},
                      {"cost_usd", r.cost_usd},
                      {"on_demand_cost_usd", r.on_demand_cost_usd},
                      {"savings", r.savings},
                      {"deadline_met", r.deadline_met},
                      {"finished", r.finished},
                      {"finish_hours", r.finish_hours},
                      {"spot_hours", r.spot_hours},
                      {"on_demand_hours", r.on_demand_hours},
                      {"local_hours", r.local_hours},
                      {"idle_hours", r.idle_hours},
                      {"changeover_hours", r.changeover_hours},
                      {"spot_cost_usd", r.spot_cost_usd},
                      {"on_demand_spent_usd", r.on_demand_spent_usd},
                      {"local_cost_usd", r.local_cost_usd},
                      {"preemptions", r.preemptions},
                      {"changeovers", r.changeovers},
                      {"moves", r.moves},
                      {"decisions", r.decisions},
                      {"trace_hours_from_start", r.trace_hours_from_start},
                      {"trace_covers_deadline", r.trace_covers_deadline}};
  if (with_segments) {
    nlohmann::json segs = nlohmann::json::array();
    for (const auto& s : r.segments)
      segs.push_back({{"start_hours", s.start_hours}, {"end_hours", s.end_hours}, {"capacity", to_string(s.capacity)},
                      {"zone", s.zone}});
    j["segments"] = std::move(segs);
  }
  return j;
}

}  // namespace jobctl::scheduler
