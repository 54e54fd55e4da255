#include "scheduler/lifetime_policy.h"

#include <algorithm>

namespace jobctl::scheduler {

void LifetimePolicy::on_reset() {
  zones_.clear();
  has_last_ = false;
  now_ = 0;
  observed_hours_ = 0;
  any_up_hours_ = 0;
  any_up_ = false;
  spent_ = 0;
  last_availability_ = 0;
}

double LifetimePolicy::expected_remaining_life(size_t z, double age) const {
  double sum = options_.prior_lifetime_hours;
  double n = 1;
  // Windows are whole decision periods long; the tolerance keeps "outlived this age" from
  // depending on how the clock's reading rounds.
  if (z < zones_.size())
    for (double length : zones_[z].windows)
      if (length > age + 1e-9) {
        sum += length - age;
        n += 1;
      }
  return sum / n;
}

void LifetimePolicy::observe(const ProgressState& s, double spot_price, double on_demand_price) {
  const double t = s.elapsed_hours;
  if (zones_.size() != s.zones()) zones_.assign(s.zones(), Zone{});
  if (has_last_) {
    const double dt = std::max(0.0, t - now_);
    observed_hours_ += dt;
    if (any_up_) any_up_hours_ += dt;
    // What ran since the last decision was billed for the whole period (a reclaim included).
    if (last_decision() == Capacity::spot) spent_ += spot_price * dt;
    if (last_decision() == Capacity::on_demand) spent_ += on_demand_price * dt;
  }
  any_up_ = false;
  for (size_t z = 0; z < zones_.size(); ++z) {
    const bool up = s.spot_in(z);
    Zone& zone = zones_[z];
    if (up && !zone.up) zone.window_start = t;
    if (!up && zone.up) zone.windows.push_back(t - zone.window_start);
    zone.up = up;
    any_up_ = any_up_ || up;
  }
  now_ = t;
  has_last_ = true;
}

Capacity LifetimePolicy::choose(const ProgressState& s) {
  // Prices in on-demand hours: the daemon's state carries none, and the simulator's must decide alike.
  const double od_price = 1.0;
  const double spot_price = options_.spot_price_ratio;
  observe(s, spot_price, od_price);
  const double d = s.changeover_hours;
  const double r = s.remaining_time();
  const double prior = s.deadline_hours > 0 ? std::min(1.0, s.total_compute_hours / s.deadline_hours) : 1.0;
  const double n0 = options_.prior_weight_hours;
  const double a = (any_up_hours_ + prior * n0) / (observed_hours_ + n0);
  last_availability_ = a;
  const double pending = s.current == Capacity::none ? 0.0 : s.pending_changeover_hours;
  const double slack = r - s.remaining_compute() - pending;
  const double reserve = options_.reserve_changeovers * d;
  const double threshold = (1.0 - a) * r + reserve;

  // The cost guard: spot that makes no progress for `hours` (a period, or a new start's whole
  // changeover), then on-demand to the end.
  const double baseline = od_price * (s.total_compute_hours + d);
  auto affordable = [&](double hours) {
    return spent_ + spot_price * std::max(hours, s.decision_period_hours) + od_price * (s.remaining_compute() + d) <=
           (1.0 + options_.max_loss) * baseline;
  };
  const bool spot_affordable = affordable(s.decision_period_hours);

  if (spot_affordable && s.current == Capacity::spot && s.spot_in(s.zone)) return Capacity::spot;
  if (spot_affordable) {
    double best_useful = 0;
    bool found = false;
    for (size_t z = 0; z < s.zones(); ++z) {
      if (!s.spot_in(z)) continue;
      const double co = s.changeover_in(z);
      const double age = now_ - zones_[z].window_start;
      const double useful = expected_remaining_life(z, age) - co;
      // Times are whole decision periods apart; the tolerance as above.
      // From on-demand, the window must have been up a while and its expected saving over
      // on-demand must pay its changeover and the changeover back to on-demand.
      const bool confirmed = s.current != Capacity::on_demand ||
                             (age >= options_.confirm_hours - 1e-9 &&
                              (od_price - spot_price) * useful >= spot_price * co + od_price * d);
      if (useful <= 0 || !confirmed || !affordable(co) || slack - co < reserve ||
          !can_defer_on_demand(s, Capacity::spot, z))
        continue;
      if (!found || useful > best_useful) {
        best_useful = useful;
        choose_spot_zone(z);
        found = true;
      }
    }
    if (found) return Capacity::spot;
  }
  if (s.current == Capacity::on_demand)
    return spot_affordable && slack >= threshold + options_.release_hysteresis_changeovers * d ? Capacity::none
                                                                                               : Capacity::on_demand;
  return slack > threshold ? Capacity::none : Capacity::on_demand;
}

}  // namespace jobctl::scheduler
