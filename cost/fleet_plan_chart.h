// The fleet plan as a chart: total cost over the period against N, the GPUs bought, stacked by
// what it is made of (today's fleet, bought GPUs, cloud, other), with today's fleet (N = 0) and
// the cheapest N marked. A self-contained SVG document like cost/breakeven_chart.h's, for the CLI
// (`--svg FILE`, `-o svg`).
//
// Thread safety: pure function.
#pragma once

#include <string>

#include "cost/fleet_plan.h"

namespace jobctl::cost {

std::string fleet_plan_svg(const FleetPlan& plan);

}  // namespace jobctl::cost
