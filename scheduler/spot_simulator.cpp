#include "scheduler/spot_simulator.h"

#include <algorithm>
#include <cmath>

namespace jobctl::scheduler {

Status validate_simulation(const SpotTrace& spot, const SimulationConfig& c) {
  auto bad = [](std::string field, std::string msg) {
    return Status(make_error(ErrorCode::invalid_argument, std::move(msg), std::move(field)));
  };
  auto finite = [](double v) { return std::isfinite(v); };
  if (!(finite(c.compute_hours) && c.compute_hours > 0)) return bad("compute_hours", "compute hours must be > 0");
  if (!(finite(c.deadline_hours) && c.deadline_hours > 0)) return bad("deadline_hours", "deadline hours must be > 0");
  if (!(finite(c.changeover_hours) && c.changeover_hours >= 0))
    return bad("changeover_hours", "changeover hours must be >= 0");
  if (!(finite(c.on_demand_usd_per_hour) && c.on_demand_usd_per_hour > 0))
    return bad("on_demand_usd_per_hour", "the on-demand price must be > 0");
  if (!(finite(c.spot_usd_per_hour) && c.spot_usd_per_hour >= 0))
    return bad("spot_usd_per_hour", "the spot price must be >= 0");
  if (!(finite(c.local_usd_per_hour) && c.local_usd_per_hour >= 0))
    return bad("local_usd_per_hour", "the local price must be >= 0");
  if (spot.available.empty() || !(spot.gap_seconds > 0)) return bad("trace", "the trace is empty");
  if (!(finite(c.start_hours) && c.start_hours >= 0 && c.start_hours < spot.hours()))
    return bad("start_hours", "the start must lie within the trace (0 to " + std::to_string(spot.hours()) + " h)");
  if (c.deadline_hours < c.compute_hours + c.changeover_hours)
    return bad("deadline_hours", "the deadline (" + std::to_string(c.deadline_hours) +
                                     " h) is shorter than compute + changeover (" +
                                     std::to_string(c.compute_hours + c.changeover_hours) +
                                     " h): not even on-demand from the start could meet it");
  return ok_status();
}

double checkpoint_transfer_hours(double checkpoint_gb, double gbit_per_s) {
  return gbit_per_s > 0 ? checkpoint_gb * 8.0 / gbit_per_s / 3600.0 : 0.0;
}

Expected<SimulationResult> simulate(const SpotTrace& spot, const SimulationConfig& c, DeadlinePolicy& policy,
                                    const SpotTrace* local) {
  return simulate_zones(std::span<const SpotTrace>(&spot, 1), c, policy, local);
}

Expected<SimulationResult> simulate_zones(std::span<const SpotTrace> zones, const SimulationConfig& c,
                                          DeadlinePolicy& policy, const SpotTrace* local) {
  if (zones.empty()) return make_error(ErrorCode::invalid_argument, "no zones to simulate", "trace");
  const SpotTrace& spot = zones.front();
  if (auto st = validate_simulation(spot, c); !st) return st.error();
  for (const auto& z : zones)
    if (z.available.empty() || z.gap_seconds != spot.gap_seconds)
      return make_error(ErrorCode::invalid_argument, "every zone's trace must have the first one's tick", "trace");
  if (!(std::isfinite(c.move_hours) && c.move_hours >= 0))
    return make_error(ErrorCode::invalid_argument, "the move's transfer hours must be >= 0", "move_hours");
  if (local && (local->available.empty() || !(local->gap_seconds > 0)))
    return make_error(ErrorCode::invalid_argument, "the local-availability trace is empty", "local_trace");

  SimulationResult r;
  r.policy = std::string(policy.name());
  r.on_demand_cost_usd = (c.compute_hours + c.changeover_hours) * c.on_demand_usd_per_hour;
  const double g = spot.gap_hours();
  const auto start_tick = static_cast<size_t>(std::floor(c.start_hours / g + 1e-9));
  r.trace_hours_from_start = spot.hours() - static_cast<double>(start_tick) * g;
  r.trace_covers_deadline = r.trace_hours_from_start >= c.deadline_hours;
  // Every sensible policy ends on on-demand; this bound only stops one that never finishes.
  const double stop_hours = c.deadline_hours + c.compute_hours + 10 * (c.changeover_hours + c.move_hours) + 10 * g;

  policy.reset();
  const double d = c.changeover_hours;
  const double c0 = c.compute_hours;
  const bool multi = zones.size() > 1;
  std::vector<bool> up(zones.size());
  double done = 0, pending = 0;
  Capacity current = Capacity::none;
  size_t zone = 0;  // where the checkpoint is
  for (size_t k = 0;; ++k) {
    const double t = static_cast<double>(k) * g;
    if (t > stop_hours) {
      r.finish_hours = t;
      break;
    }
    const size_t tick = start_tick + k;
    for (size_t z = 0; z < zones.size(); ++z) up[z] = zones[z].available_at(tick);
    const bool spot_up = up[zone];
    bool local_up = false;
    if (local) {
      const double abs_hours = static_cast<double>(tick) * g;
      local_up = local->available_at(static_cast<size_t>(std::floor(abs_hours / local->gap_hours() + 1e-9)));
    }
    if (current == Capacity::spot && !spot_up) {
      ++r.preemptions;
      current = Capacity::none;
      pending = 0;
    }
    if (current == Capacity::local && !local_up) {
      current = Capacity::none;
      pending = 0;
    }

    ProgressState s;
    s.elapsed_hours = t;
    s.deadline_hours = c.deadline_hours;
    s.total_compute_hours = c0;
    s.done_compute_hours = done;
    s.changeover_hours = d;
    s.decision_period_hours = g;
    s.current = current;
    s.pending_changeover_hours = pending;
    s.spot_available = spot_up;
    s.local_available = local_up;
    if (multi) s.zone_spot_available = up;
    s.zone = zone;
    s.move_hours = c.move_hours;
    const Capacity next = policy.decide(s);
    const size_t next_zone = next == Capacity::spot ? policy.spot_zone() : zone;
    ++r.decisions;
    if (next != current || next_zone != zone) {
      if (next != Capacity::none) {
        pending = s.changeover_in(next_zone);
        ++r.changeovers;
        if (next_zone != zone && done > 0) ++r.moves;
      } else {
        pending = 0;
      }
      current = next;
      zone = next_zone;
    }

    double used = 0;  // hours of this tick billed
    if (current != Capacity::none) {
      const double overhead = std::min(pending, g);
      pending -= overhead;
      const double work = std::min(g - overhead, c0 - done);
      used = overhead + work;
      double price = c.on_demand_usd_per_hour;
      if (current == Capacity::spot) {
        const SpotTrace& here = zones[zone];
        price = c.spot_price_from_trace && tick < here.prices.size() ? here.prices[tick] : c.spot_usd_per_hour;
      }
      if (current == Capacity::local) price = c.local_usd_per_hour;
      const double cost = price * used;
      r.cost_usd += cost;
      r.changeover_hours += overhead;
      switch (current) {
        case Capacity::spot: r.spot_hours += used; r.spot_cost_usd += cost; break;
        case Capacity::on_demand: r.on_demand_hours += used; r.on_demand_spent_usd += cost; break;
        case Capacity::local: r.local_hours += used; r.local_cost_usd += cost; break;
        case Capacity::none: break;
      }
      done += work;
    } else {
      used = g;
      r.idle_hours += g;
    }
    if (!r.segments.empty() && r.segments.back().capacity == current && r.segments.back().zone == zone &&
        r.segments.back().end_hours >= t - 1e-9)
      r.segments.back().end_hours = t + used;
    else
      r.segments.push_back(SimulationSegment{t, t + used, current, zone});

    if (done >= c0 - 1e-9) {
      r.finished = true;
      r.finish_hours = t + used;
      break;
    }
  }
  r.deadline_met = r.finished && r.finish_hours <= c.deadline_hours + 1e-9;
  r.savings = 1.0 - r.cost_usd / r.on_demand_cost_usd;
  return r;
}

}  // namespace jobctl::scheduler
