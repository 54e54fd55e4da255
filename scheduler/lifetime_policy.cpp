#include "scheduler/lifetime_policy.h"

#include <algorithm>
#include <cmath>

namespace jobctl::scheduler {

namespace {
// Windows and outages are whole decision periods long; the tolerance keeps "outlived this age"
// from depending on how the clock's reading rounds.
constexpr double kTimeEps = 1e-9;

// The mean of (length - age) over the lengths that outlived `age`, with one prior of `prior`.
double expected_remaining(const std::vector<double>& lengths, double prior, double age) {
  double sum = prior;
  double n = 1;
  for (double length : lengths)
    if (length > age + kTimeEps) {
      sum += length - age;
      n += 1;
    }
  return sum / n;
}
}  // namespace

void LifetimePolicy::on_reset() {
  zones_.clear();
  has_last_ = false;
  now_ = 0;
  observed_hours_ = 0;
  outages_.clear();
  any_up_ = false;
  outage_start_ = 0;
  follower_on_ = false;
  follower_zone_ = 0;
  follower_pending_ = 0;
  follower_useful_ = 0;
  spent_ = 0;
  last_useful_share_ = 0;
  last_need_ = 0;
}

double LifetimePolicy::expected_remaining_life(size_t z, double age) const {
  static const std::vector<double> kNone;
  return expected_remaining(z < zones_.size() ? zones_[z].windows : kNone, options_.prior_lifetime_hours, age);
}

double LifetimePolicy::survival(size_t z, double age, double changeover) const {
  double outlived = 1, survived = 1;  // the prior window survives
  if (z < zones_.size())
    for (double length : zones_[z].windows)
      if (length > age + kTimeEps) {
        outlived += 1;
        survived += length >= age + changeover - kTimeEps;
      }
  return survived / outlived;
}

void LifetimePolicy::observe(const ProgressState& s, double spot_price, double on_demand_price) {
  const double t = s.elapsed_hours;
  if (zones_.size() != s.zones()) zones_.assign(s.zones(), Zone{});
  if (has_last_) {
    const double dt = std::max(0.0, t - now_);
    observed_hours_ += dt;
    // What ran since the last decision was billed for the whole period (a reclaim included).
    if (last_decision() == Capacity::spot) spent_ += spot_price * dt;
    if (last_decision() == Capacity::on_demand) spent_ += on_demand_price * dt;
    if (follower_on_) {
      const double overhead = std::min(follower_pending_, dt);
      follower_pending_ -= overhead;
      follower_useful_ += dt - overhead;
    }
  }
  bool any_up = false;
  for (size_t z = 0; z < zones_.size(); ++z) {
    const bool up = s.spot_in(z);
    Zone& zone = zones_[z];
    if (up && !zone.up) zone.window_start = t;
    if (!up && zone.up) zone.windows.push_back(t - zone.window_start);
    zone.up = up;
    any_up = any_up || up;
  }
  if (has_last_ && any_up && !any_up_) outages_.push_back(t - outage_start_);
  if (!any_up && (any_up_ || !has_last_)) outage_start_ = t;
  any_up_ = any_up;
  if (!(follower_on_ && zones_[follower_zone_].up)) {
    follower_on_ = false;
    for (size_t z = 0; z < zones_.size() && !follower_on_; ++z)
      if (zones_[z].up) {
        follower_pending_ = s.changeover_hours + (z != follower_zone_ && follower_useful_ > 0 ? s.move_hours : 0.0);
        follower_zone_ = z;
        follower_on_ = true;
      }
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
  const double c = s.remaining_compute();
  const double prior = s.deadline_hours > 0 ? std::min(1.0, s.total_compute_hours / s.deadline_hours) : 1.0;
  const double n0 = options_.prior_weight_hours;
  const double u = (follower_useful_ + prior * n0) / (observed_hours_ + n0);
  const double need = c - u * r;
  last_useful_share_ = u;
  last_need_ = need;
  const double pending = s.current == Capacity::none ? 0.0 : s.pending_changeover_hours;
  const double slack = r - c - pending;

  // The cost guard: worst cases in on-demand hours against (1 + max_loss) x all on-demand.
  const double excess_allowance = options_.max_loss * od_price * (s.total_compute_hours + d);
  const double allowed = od_price * (s.total_compute_hours + d) + excess_allowance;
  // Spot that makes no progress for `hours` (a period, or a new start's whole changeover), then
  // on-demand to the end.
  auto affordable = [&](double hours) {
    return spent_ + spot_price * std::max(hours, s.decision_period_hours) + od_price * (c + d) <= allowed;
  };
  // On spot, its zone up: another period bills a period of spot and keeps what it made (a reclaim
  // keeps the work done), then on-demand to the end. Never a wait here: a running spot job has
  // nothing to gain from stopping, and the daemon leaves spot only for on-demand.
  if (s.current == Capacity::spot && s.spot_in(s.zone)) {
    const double g = s.decision_period_hours;
    const double made = std::min(c, std::max(0.0, g - pending));
    return spent_ + spot_price * g + od_price * (c - made + d) <= allowed ? Capacity::spot : Capacity::on_demand;
  }

  // The windows the remaining time is expected to bring (one per outage, with one prior cycle),
  // and the returns from on-demand (2 d each) the slack can pay for: `share` of those windows.
  const double prior_cycle = options_.prior_lifetime_hours + options_.prior_outage_hours;
  const double cycles_per_hour =
      (static_cast<double>(outages_.size()) + (prior_cycle > 0 ? n0 / prior_cycle : 0.0)) / (observed_hours_ + n0);
  const double future_windows = cycles_per_hour * r;
  const double returns = d > 0 ? std::max(0.0, slack) / (2 * d) : future_windows;
  const double share = future_windows > 0 ? std::min(1.0, returns / future_windows) : 1.0;
  // Leaving on-demand: a window must have been up confirm_changeovers x d and, when the slack pays
  // returns for only `share` of the windows, as long as the longest `share` of those seen.
  double confirm = options_.confirm_changeovers * d;
  if (share < 1.0) {
    std::vector<double> lengths{options_.prior_lifetime_hours};
    for (const auto& zone : zones_) lengths.insert(lengths.end(), zone.windows.begin(), zone.windows.end());
    std::sort(lengths.begin(), lengths.end());
    const auto k = static_cast<size_t>(std::floor((1.0 - share) * static_cast<double>(lengths.size())));
    if (k < lengths.size()) confirm = std::max(confirm, lengths[k]);
  }

  double best_useful = 0;
  bool found = false;
  for (size_t z = 0; z < s.zones(); ++z) {
    if (!s.spot_in(z)) continue;
    const double co = s.changeover_in(z);
    const double age = now_ - zones_[z].window_start;
    const double useful = expected_remaining_life(z, age) - co;
    if (useful <= 0 || !affordable(co) || !can_defer_on_demand(s, Capacity::spot, z)) continue;
    // The share of windows of this age that outlived a changeover must be at least the share of
    // the cost guard's allowance already spent (the allowance must not all go on flickers: spot
    // would then be out of reach for good), and start_survival where the slack pays a return for
    // every window to come (waiting for a window to prove itself then costs little).
    const double spent_share =
        excess_allowance > 0 ? 1.0 - (allowed - spent_ - od_price * (c + d)) / excess_allowance : 0.0;
    if (survival(z, age, co) < std::max(spent_share, options_.start_survival * share)) continue;
    if (s.current == Capacity::on_demand) {
      const bool worth = (od_price - spot_price) * useful >= spot_price * co + od_price * d;
      if (!worth || slack - co < d || age < confirm - kTimeEps) continue;
    }
    if (!found || useful > best_useful) {
      best_useful = useful;
      choose_spot_zone(z);
      found = true;
    }
  }
  if (found) return Capacity::spot;

  // An outage (or no spot worth starting). b(a): what bridging every outage from age a on would
  // have bridged so far, per hour — the closed outages, the current one so far, and the prior
  // (outages exponential with mean prior_outage_hours, (1 - C0/R0) of the time).
  const double age = any_up_ ? 0.0 : now_ - outage_start_;
  double bridged = age;
  for (double length : outages_) bridged += std::max(0.0, length - age);
  const double m = options_.prior_outage_hours;
  const double prior_bridged = (1.0 - prior) * (m > 0 ? std::exp(-age / m) : 0.0) * n0;
  const double bridge_rate = (bridged + prior_bridged) / (observed_hours_ + n0);
  const bool needed = need > 0 && need >= share * r * bridge_rate;
  const bool low_slack = slack - s.decision_period_hours < options_.idle_floor_changeovers * d;
  // On demand it stays while work is needed or the slack is low (stopping would only start it again).
  if (s.current == Capacity::on_demand) return need > 0 || low_slack ? Capacity::on_demand : Capacity::none;
  // A bridge must leave money for one return to spot (its changeover, and on-demand's again).
  const bool bridge_affordable =
      spent_ + od_price * d + spot_price * (d + s.move_hours) + od_price * (c + d) <= allowed;
  return (needed || low_slack) && bridge_affordable ? Capacity::on_demand : Capacity::none;
}

}  // namespace jobctl::scheduler
