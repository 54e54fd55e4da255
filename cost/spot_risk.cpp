#include "cost/spot_risk.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace jobctl::cost {

double young_interval_hours(double c, double lambda) {
  if (!(lambda > 0)) return std::numeric_limits<double>::infinity();
  return std::sqrt(2.0 * std::max(c, 0.0) / lambda);
}

double daly_interval_hours(double c, double m) {
  if (!(m > 0) || !std::isfinite(m)) return std::numeric_limits<double>::infinity();
  c = std::max(c, 0.0);
  if (c >= 2.0 * m) return m;
  const double x = c / (2.0 * m);
  return std::sqrt(2.0 * c * m) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - c;
}

double spot_time_factor(double c, double r, double lambda) {
  c = std::max(c, 0.0);
  r = std::max(r, 0.0);
  if (!(lambda > 0)) return 1.0;
  const double tau = daly_interval_hours(c, 1.0 / lambda);
  if (!(tau > 0)) return 1.0 + lambda * r;  // C = 0: checkpoints are free, only restarts cost
  return 1.0 + c / tau + lambda * (tau / 2.0 + r);
}

SpotRunEstimate spot_run_estimate(double t, double c, double r, double lambda, double price) {
  SpotRunEstimate e;
  t = std::max(t, 0.0);
  e.checkpoint_interval_hours =
      lambda > 0 ? daly_interval_hours(std::max(c, 0.0), 1.0 / lambda) : std::numeric_limits<double>::infinity();
  const double factor = spot_time_factor(c, r, lambda);
  e.expected_hours = t * factor;
  e.expected_cost_usd = std::max(price, 0.0) * e.expected_hours;
  e.overhead_fraction = factor - 1.0;
  return e;
}

}  // namespace jobctl::cost
