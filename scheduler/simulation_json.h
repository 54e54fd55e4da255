// A simulation result as JSON (`jobctl simulate -o json`): the figures flat at the top level —
// policy, cost_usd, on_demand_cost_usd, savings, deadline_met, finished, finish_hours, spot_hours,
// on_demand_hours, local_hours, idle_hours, changeover_hours, preemptions, changeovers,
// trace_covers_deadline — and, when asked for, "segments": [{"start_hours", "end_hours",
// "capacity"}].
//
// Thread safety: pure function.
#pragma once

#include <nlohmann/json.hpp>

#include "scheduler/spot_simulator.h"

namespace jobctl::scheduler {

nlohmann::json simulation_json(const SimulationResult& r, bool with_segments = false);

}  // namespace jobctl::scheduler
