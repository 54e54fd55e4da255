#include "scheduler/adaptive_progress.h"

#include <algorithm>

namespace jobctl::scheduler {

void AdaptiveProgressPolicy::on_reset() {
  has_last_ = false;
  last_available_ = false;
  last_t_ = 0;
  observed_hours_ = 0;
  available_hours_ = 0;
  run_start_ = 0;
  last_estimate_ = 0;
}

void AdaptiveProgressPolicy::observe(const ProgressState& s) {
  const double t = s.elapsed_hours;
  if (has_last_) {
    const double dt = std::max(0.0, t - last_t_);
    observed_hours_ += dt;
    if (last_available_) available_hours_ += dt;
  }
  if (s.spot_available && (!has_last_ || !last_available_)) run_start_ = t;
  last_t_ = t;
  last_available_ = s.spot_available;
  has_last_ = true;
}

Capacity AdaptiveProgressPolicy::choose(const ProgressState& s) {
  observe(s);
  const double d = s.changeover_hours;
  const double r = s.remaining_time();
  const double prior = options_.prior_availability.value_or(
      s.deadline_hours > 0 ? std::min(1.0, s.total_compute_hours / s.deadline_hours) : 1.0);
  const double n0 = options_.prior_weight_hours;
  const double a = (available_hours_ + prior * n0) / (observed_hours_ + n0);
  last_estimate_ = a;
  const double pending = s.current == Capacity::none ? 0.0 : s.pending_changeover_hours;
  const double slack = r - s.remaining_compute() - pending;
  const double reserve = options_.reserve_changeovers * d;
  const double threshold = (1.0 - a) * r + reserve;

  if (s.spot_available) {
    if (s.current == Capacity::spot) return Capacity::spot;
    // Times are whole decision periods apart; a tolerance keeps "up for exactly confirm_hours"
    // from depending on how the clock's reading rounds (ticks × period, or milliseconds / 3.6e6).
    const double run_age = s.elapsed_hours - run_start_;
    if (can_defer_on_demand(s, Capacity::spot) && slack - d >= reserve &&
        (s.current != Capacity::on_demand || run_age >= options_.confirm_hours - 1e-9))
      return Capacity::spot;
    if (s.current == Capacity::on_demand) return Capacity::on_demand;
    return slack > threshold ? Capacity::none : Capacity::on_demand;
  }
  if (s.current == Capacity::on_demand)
    return slack >= threshold + options_.release_hysteresis_changeovers * d ? Capacity::none : Capacity::on_demand;
  return slack > threshold ? Capacity::none : Capacity::on_demand;
}

}  // namespace jobctl::scheduler
