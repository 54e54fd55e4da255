// Axis ticks for the SVG charts of cost/ (breakeven_chart.h, fleet_plan_chart.h): a "nice" step
// (1, 2 or 5 x 10^k) giving about `target` ticks from 0 up to `max` (> 0).
//
// Thread safety: pure function.
#pragma once

#include <cmath>

namespace jobctl::cost {

inline double chart_tick_step(double max, int target) {
  const double raw = max / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10.0 * mag;
}

}  // namespace jobctl::cost
