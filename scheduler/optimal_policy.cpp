#include "scheduler/optimal_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace jobctl::scheduler {

namespace {

constexpr double kNoCost = std::numeric_limits<double>::infinity();
constexpr double kMillisPerHour = 3.6e6;

// What runs between ticks, as the planner's state sees it.
enum Slot : int { kIdle = 0, kSpot = 1, kOnDemand = 2, kSlots = 3 };

Capacity capacity_of(int slot) { return slot == kSpot ? Capacity::spot : slot == kOnDemand ? Capacity::on_demand : Capacity::none; }

// How a state was reached (one byte per state, for the way back).
enum Pred : uint8_t {
  kUnreached = 0,
  kStart,          // idle at tick 0 with no progress
  kIdled,          // idle: was idle at the previous tick
  kStoppedSpot,    // idle: was running spot at this tick (stopped, or reclaimed)
  kStoppedDemand,  // idle: was running on-demand at this tick
  kContinued,      // running: was running the same at the previous tick
  kChangedOver,    // running: started from idle L ticks before, a whole changeover since
};

// How the cheapest finish was reached: in a tick of running, or in a changeover's last tick.
struct Finish {
  double cost = kNoCost;
  int64_t tick = 0;
  int slot = kIdle;   // what ran in the finishing ticks
  bool after_changeover = false;
  int64_t progress = 0;  // grid units at the state the finish started from
  int64_t finish_ms = 0;
};

}  // namespace

Expected<OptimalPlan> plan_optimal(const SpotTrace& spot, const SimulationConfig& c) {
  if (auto st = validate_simulation(spot, c); !st) return st.error();

  // Integer milliseconds: every duration the planner adds up is exact.
  const int64_t g = std::llround(spot.gap_seconds * 1000.0);
  const int64_t d = std::llround(c.changeover_hours * kMillisPerHour);
  const int64_t work = std::llround(c.compute_hours * kMillisPerHour);
  const int64_t deadline = std::llround(c.deadline_hours * kMillisPerHour);
  if (g <= 0) return make_error(ErrorCode::invalid_argument, "the trace's tick is under a millisecond", "trace");

  // A changeover spans L ticks; its last tick does r of work (all of it when there is none).
  const int64_t L = d == 0 ? 1 : (d + g - 1) / g;
  const int64_t r = d == 0 ? g : L * g - d;
  const int64_t grid = r == 0 ? g : std::gcd(g, r);
  const int64_t gu = g / grid, ru = r / grid;

  const auto start_tick = static_cast<size_t>(std::floor(c.start_hours / spot.gap_hours() + 1e-9));
  const int64_t ticks = (deadline + g - 1) / g;  // ticks that begin before the deadline

  // The states kept at tick k: progress p (grid units, p * grid < work) with
  // work - p * grid <= deadline - k * g (still in time) and p * grid <= k * g (no faster than time).
  std::vector<int64_t> lo(static_cast<size_t>(ticks) + 1), width(static_cast<size_t>(ticks) + 1),
      offset(static_cast<size_t>(ticks) + 2, 0);
  int64_t max_width = 0;
  for (int64_t k = 0; k <= ticks; ++k) {
    const int64_t t = k * g;
    const int64_t need = work - (deadline - t);  // the least progress that is still in time
    const int64_t l = need <= 0 ? 0 : (need + grid - 1) / grid;
    const int64_t h = std::min(t / grid, (work - 1) / grid);
    lo[static_cast<size_t>(k)] = l;
    width[static_cast<size_t>(k)] = std::max<int64_t>(0, h - l + 1);
    max_width = std::max(max_width, width[static_cast<size_t>(k)]);
    offset[static_cast<size_t>(k) + 1] = offset[static_cast<size_t>(k)] + width[static_cast<size_t>(k)] * kSlots;
    if (offset[static_cast<size_t>(k) + 1] > kMaxOptimalCells)
      return make_error(ErrorCode::limit_exceeded,
                        "the optimal plan needs more than " + std::to_string(kMaxOptimalCells) +
                            " states for this job (progress on a " + std::to_string(grid) +
                            " ms grid): choose a changeover that is a round number of seconds against the " +
                            std::to_string(g / 1000.0) + " s tick, or a shorter job",
                        "changeover_hours");
  }
  std::vector<uint8_t> pred(static_cast<size_t>(offset.back()), kUnreached);
  auto pred_at = [&](int64_t k, int slot, int64_t p) -> uint8_t& {
    return pred[static_cast<size_t>(offset[static_cast<size_t>(k)] + slot * width[static_cast<size_t>(k)] +
                                    (p - lo[static_cast<size_t>(k)]))];
  };
  auto in_band = [&](int64_t k, int64_t p) {
    return k <= ticks && p >= lo[static_cast<size_t>(k)] && p < lo[static_cast<size_t>(k)] + width[static_cast<size_t>(k)];
  };

  // Costs of L + 1 ticks in a ring (a changeover writes L ticks ahead), slots x max_width each.
  const int64_t ring = L + 1;
  std::vector<double> cost(static_cast<size_t>(ring * kSlots * max_width), kNoCost);
  auto cost_at = [&](int64_t k, int slot, int64_t p) -> double& {
    return cost[static_cast<size_t>(((k % ring) * kSlots + slot) * max_width + (p - lo[static_cast<size_t>(k)]))];
  };

  auto trace_tick = [&](int64_t k) { return start_tick + static_cast<size_t>(k); };
  auto spot_up = [&](int64_t k) { return spot.available_at(trace_tick(k)); };
  auto spot_price = [&](int64_t k) {
    const size_t tt = trace_tick(k);
    return c.spot_price_from_trace && tt < spot.prices.size() ? spot.prices[tt] : c.spot_usd_per_hour;
  };
  auto price = [&](int slot, int64_t k) { return slot == kSpot ? spot_price(k) : c.on_demand_usd_per_hour; };
  auto usd = [](double per_hour, int64_t ms) { return per_hour * static_cast<double>(ms) / kMillisPerHour; };

  // A changeover started at tick k: spot must stay up through its L ticks (else it is reclaimed
  // before making progress, which waiting would match for free). Its first L - 1 ticks are billed whole.
  auto changeover_possible = [&](int slot, int64_t k) {
    if (slot != kSpot) return true;
    for (int64_t i = 0; i < L; ++i)
      if (!spot_up(k + i)) return false;
    return true;
  };
  auto changeover_head_cost = [&](int slot, int64_t k) {
    double sum = 0;
    for (int64_t i = 0; i + 1 < L; ++i) sum += usd(price(slot, k + i), g);
    return sum;
  };

  Finish best;
  auto finish = [&](double total, int64_t k, int slot, bool after_changeover, int64_t p, int64_t end_ms) {
    if (end_ms <= deadline && total < best.cost) best = Finish{total, k, slot, after_changeover, p, end_ms};
  };

  cost_at(0, kIdle, 0) = 0;
  pred_at(0, kIdle, 0) = kStart;
  for (int64_t k = 0; k < ticks; ++k) {
    const int64_t t = k * g;
    const int64_t l = lo[static_cast<size_t>(k)], w = width[static_cast<size_t>(k)];
    const bool up = spot_up(k);
    // Running states may stop (or are reclaimed) at this tick: idle, at no cost, before it decides.
    for (int slot : {kSpot, kOnDemand})
      for (int64_t p = l; p < l + w; ++p) {
        const double v = cost_at(k, slot, p);
        if (v < cost_at(k, kIdle, p)) {
          cost_at(k, kIdle, p) = v;
          pred_at(k, kIdle, p) = slot == kSpot ? kStoppedSpot : kStoppedDemand;
        }
      }
    // Idle: wait a tick, or start a changeover.
    for (int slot : {kSpot, kOnDemand}) {
      if (!changeover_possible(slot, k)) continue;
      const double head = changeover_head_cost(slot, k);
      const int64_t last = k + L - 1;
      const double last_price = price(slot, last);
      for (int64_t p = l; p < l + w; ++p) {
        const double v = cost_at(k, kIdle, p);
        if (v == kNoCost) continue;
        const int64_t left = work - p * grid;
        if (left <= r) {  // finishes in the changeover's last tick
          finish(v + head + usd(last_price, (g - r) + left), k, slot, true, p, t + (L - 1) * g + (g - r) + left);
          continue;
        }
        const int64_t to = p + ru;
        if (!in_band(k + L, to)) continue;
        const double total = v + head + usd(last_price, g);
        if (total < cost_at(k + L, slot, to)) {
          cost_at(k + L, slot, to) = total;
          pred_at(k + L, slot, to) = kChangedOver;
        }
      }
    }
    for (int64_t p = l; p < l + w; ++p) {
      const double v = cost_at(k, kIdle, p);
      if (v == kNoCost || !in_band(k + 1, p)) continue;
      if (v < cost_at(k + 1, kIdle, p)) {
        cost_at(k + 1, kIdle, p) = v;
        pred_at(k + 1, kIdle, p) = kIdled;
      }
    }
    // Running: another tick of work.
    for (int slot : {kSpot, kOnDemand}) {
      if (slot == kSpot && !up) continue;
      const double per_hour = price(slot, k);
      for (int64_t p = l; p < l + w; ++p) {
        const double v = cost_at(k, slot, p);
        if (v == kNoCost) continue;
        const int64_t left = work - p * grid;
        if (left <= g) {
          finish(v + usd(per_hour, left), k, slot, false, p, t + left);
          continue;
        }
        const int64_t to = p + gu;
        if (!in_band(k + 1, to)) continue;
        const double total = v + usd(per_hour, g);
        if (total < cost_at(k + 1, slot, to)) {
          cost_at(k + 1, slot, to) = total;
          pred_at(k + 1, slot, to) = kContinued;
        }
      }
    }
    // This tick's slot of the ring is reused for tick k + ring.
    std::fill_n(cost.begin() + static_cast<std::ptrdiff_t>((k % ring) * kSlots * max_width), kSlots * max_width, kNoCost);
  }
  if (best.cost == kNoCost)
    return make_error(ErrorCode::invalid_argument, "no schedule meets the deadline", "deadline_hours");

  // The way back, writing what ran in each tick.
  OptimalPlan plan;
  plan.cost_usd = best.cost;
  plan.finish_hours = static_cast<double>(best.finish_ms) / kMillisPerHour;
  plan.cells = offset.back();
  const int64_t span = best.after_changeover ? L : 1;
  plan.decisions.assign(static_cast<size_t>(best.tick + span), Capacity::none);
  for (int64_t i = 0; i < span; ++i) plan.decisions[static_cast<size_t>(best.tick + i)] = capacity_of(best.slot);
  int64_t k = best.tick, p = best.progress;
  int slot = best.after_changeover ? kIdle : best.slot;
  for (;;) {
    const uint8_t how = pred_at(k, slot, p);
    if (how == kStart) break;
    switch (how) {
      case kIdled: --k; break;  // that tick ran nothing (already none)
      case kStoppedSpot: slot = kSpot; break;
      case kStoppedDemand: slot = kOnDemand; break;
      case kContinued:
        --k;
        p -= gu;
        plan.decisions[static_cast<size_t>(k)] = capacity_of(slot);
        break;
      case kChangedOver:
        for (int64_t i = 1; i <= L; ++i) plan.decisions[static_cast<size_t>(k - i)] = capacity_of(slot);
        k -= L;
        p -= ru;
        slot = kIdle;
        break;
      default:
        return make_error(ErrorCode::internal, "optimal plan: a state on the way back was never reached", "");
    }
  }
  return plan;
}

Capacity OptimalPolicy::choose(const ProgressState& s) {
  const auto tick = static_cast<size_t>(std::llround(s.elapsed_hours / tick_hours_));
  // Past the plan (it cannot happen when the plan is played on its own trace): finish on-demand.
  return tick < plan_.decisions.size() ? plan_.decisions[tick] : Capacity::on_demand;
}

Expected<std::unique_ptr<OptimalPolicy>> make_optimal_policy(const SpotTrace& spot, const SimulationConfig& config) {
  auto plan = plan_optimal(spot, config);
  if (!plan) return plan.error();
  return std::make_unique<OptimalPolicy>(std::move(*plan), spot.gap_hours());
}

}  // namespace jobctl::scheduler
