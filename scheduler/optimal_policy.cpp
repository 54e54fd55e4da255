#include "scheduler/optimal_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace jobctl::scheduler {

namespace {

constexpr double kNoCost = std::numeric_limits<double>::infinity();
constexpr double kMillisPerHour = 3.6e6;

// What runs between ticks, as the planner's state sees it: per zone, idle (the checkpoint is
// there), spot there, or on-demand with the checkpoint there.
enum Kind : int { kIdle = 0, kSpot = 1, kOnDemand = 2, kSlotKinds = 3 };
int slot_of(int zone, int kind) { return zone * kSlotKinds + kind; }
int zone_of(int slot) { return slot / kSlotKinds; }
int kind_of(int slot) { return slot % kSlotKinds; }
Capacity capacity_of(int kind) { return kind == kSpot ? Capacity::spot : kind == kOnDemand ? Capacity::on_demand : Capacity::none; }

// How a state was reached (one byte per state, for the way back): the step in the low 3 bits, a
// changeover's "moved the checkpoint" in bit 3, the zone it came from in the high 4 bits.
enum Pred : uint8_t {
  kUnreached = 0,
  kStart,          // idle at tick 0 with no progress
  kIdled,          // idle: was idle at the previous tick
  kStoppedSpot,    // idle: was running spot at this tick (stopped, or reclaimed)
  kStoppedDemand,  // idle: was running on-demand at this tick
  kContinued,      // running: was running the same at the previous tick
  kChangedOver,    // running: started from idle L ticks before, a whole changeover since
};
constexpr uint8_t kMovedBit = 8;
uint8_t pred_byte(Pred p, bool moved, int from_zone) {
  return static_cast<uint8_t>(p | (moved ? kMovedBit : 0) | (from_zone << 4));
}

// How the cheapest finish was reached: in a tick of running, or in a changeover's last tick.
struct Finish {
  double cost = kNoCost;
  int64_t tick = 0;
  int slot = kIdle;   // what ran in the finishing ticks
  int from_slot = kIdle;  // after a changeover: the idle state it started from
  bool after_changeover = false;
  bool moved = false;
  int64_t progress = 0;  // grid units at the state the finish started from
  int64_t finish_ms = 0;
};

// A changeover of `ms`: it spans L ticks; its last tick does r of work (all of it when there is none).
struct Changeover {
  int64_t L = 1, r = 0;
};
Changeover changeover_of(int64_t ms, int64_t g) {
  Changeover c;
  c.L = ms == 0 ? 1 : (ms + g - 1) / g;
  c.r = ms == 0 ? g : c.L * g - ms;
  return c;
}

}  // namespace

Expected<OptimalPlan> plan_optimal(const SpotTrace& spot, const SimulationConfig& c) {
  return plan_optimal_zones(std::span<const SpotTrace>(&spot, 1), c);
}

Expected<OptimalPlan> plan_optimal_zones(std::span<const SpotTrace> zones, const SimulationConfig& c) {
  if (zones.empty()) return make_error(ErrorCode::invalid_argument, "no zones to plan", "trace");
  if (zones.size() > 15) return make_error(ErrorCode::invalid_argument, "at most 15 zones", "trace");
  const SpotTrace& spot = zones.front();
  if (auto st = validate_simulation(spot, c); !st) return st.error();
  for (const auto& z : zones)
    if (z.available.empty() || z.gap_seconds != spot.gap_seconds)
      return make_error(ErrorCode::invalid_argument, "every zone's trace must have the first one's tick", "trace");
  const int nz = static_cast<int>(zones.size());
  const int slots = nz * kSlotKinds;

  // Integer milliseconds: every duration the planner adds up is exact.
  const int64_t g = std::llround(spot.gap_seconds * 1000.0);
  const int64_t d = std::llround(c.changeover_hours * kMillisPerHour);
  const int64_t m = nz > 1 ? std::llround(c.move_hours * kMillisPerHour) : 0;
  const int64_t work = std::llround(c.compute_hours * kMillisPerHour);
  const int64_t deadline = std::llround(c.deadline_hours * kMillisPerHour);
  if (g <= 0) return make_error(ErrorCode::invalid_argument, "the trace's tick is under a millisecond", "trace");

  const Changeover same = changeover_of(d, g), moved = changeover_of(d + m, g);
  int64_t grid = same.r == 0 ? g : std::gcd(g, same.r);
  if (m > 0 && moved.r != 0) grid = std::gcd(grid, moved.r);
  const int64_t gu = g / grid;

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
    offset[static_cast<size_t>(k) + 1] = offset[static_cast<size_t>(k)] + width[static_cast<size_t>(k)] * slots;
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
  const int64_t ring = std::max(same.L, moved.L) + 1;
  std::vector<double> cost(static_cast<size_t>(ring * slots * max_width), kNoCost);
  auto cost_at = [&](int64_t k, int slot, int64_t p) -> double& {
    return cost[static_cast<size_t>(((k % ring) * slots + slot) * max_width + (p - lo[static_cast<size_t>(k)]))];
  };

  auto trace_tick = [&](int64_t k) { return start_tick + static_cast<size_t>(k); };
  auto spot_up = [&](int zone, int64_t k) { return zones[static_cast<size_t>(zone)].available_at(trace_tick(k)); };
  auto spot_price = [&](int zone, int64_t k) {
    const size_t tt = trace_tick(k);
    const auto& prices = zones[static_cast<size_t>(zone)].prices;
    return c.spot_price_from_trace && tt < prices.size() ? prices[tt] : c.spot_usd_per_hour;
  };
  auto price = [&](int slot, int64_t k) {
    return kind_of(slot) == kSpot ? spot_price(zone_of(slot), k) : c.on_demand_usd_per_hour;
  };
  auto usd = [](double per_hour, int64_t ms) { return per_hour * static_cast<double>(ms) / kMillisPerHour; };

  // A changeover started at tick k: spot must stay up through its L ticks (else it is reclaimed
  // before making progress, which waiting would match for free). Its first L - 1 ticks are billed whole.
  auto changeover_possible = [&](int slot, int64_t k, int64_t L) {
    if (kind_of(slot) != kSpot) return true;
    for (int64_t i = 0; i < L; ++i)
      if (!spot_up(zone_of(slot), k + i)) return false;
    return true;
  };
  auto changeover_head_cost = [&](int slot, int64_t k, int64_t L) {
    double sum = 0;
    for (int64_t i = 0; i + 1 < L; ++i) sum += usd(price(slot, k + i), g);
    return sum;
  };

  Finish best;
  cost_at(0, slot_of(0, kIdle), 0) = 0;
  pred_at(0, slot_of(0, kIdle), 0) = kStart;
  for (int64_t k = 0; k < ticks; ++k) {
    const int64_t t = k * g;
    const int64_t l = lo[static_cast<size_t>(k)], w = width[static_cast<size_t>(k)];
    for (int z = 0; z < nz; ++z) {
      const int idle = slot_of(z, kIdle);
      // Running states may stop (or are reclaimed) at this tick: idle, at no cost, before it decides.
      for (int kind : {kSpot, kOnDemand})
        for (int64_t p = l; p < l + w; ++p) {
          const double v = cost_at(k, slot_of(z, kind), p);
          if (v < cost_at(k, idle, p)) {
            cost_at(k, idle, p) = v;
            pred_at(k, idle, p) = kind == kSpot ? kStoppedSpot : kStoppedDemand;
          }
        }
    }
    for (int z = 0; z < nz; ++z) {
      const int idle = slot_of(z, kIdle);
      // Idle: start a changeover — on-demand here, spot here or in another zone.
      for (int to_zone = 0; to_zone < nz; ++to_zone)
        for (int kind : {kSpot, kOnDemand}) {
          if (kind == kOnDemand && to_zone != z) continue;
          const int to = slot_of(to_zone, kind);
          const bool move = to_zone != z;
          // A move pays its transfer once there is progress (a checkpoint to move).
          const bool possible[2] = {changeover_possible(to, k, same.L), changeover_possible(to, k, moved.L)};
          const double head[2] = {changeover_head_cost(to, k, same.L), changeover_head_cost(to, k, moved.L)};
          const double last_price[2] = {price(to, k + same.L - 1), price(to, k + moved.L - 1)};
          for (int64_t p = l; p < l + w; ++p) {
            const double v = cost_at(k, idle, p);
            if (v == kNoCost) continue;
            const int which = move && p > 0 ? 1 : 0;
            if (!possible[which]) continue;
            const Changeover& co = which ? moved : same;
            const int64_t left = work - p * grid;
            if (left <= co.r) {  // finishes in the changeover's last tick
              const double total = v + head[which] + usd(last_price[which], (g - co.r) + left);
              const int64_t end_ms = t + (co.L - 1) * g + (g - co.r) + left;
              if (end_ms <= deadline && total < best.cost)
                best = Finish{total, k, to, idle, true, which == 1, p, end_ms};
              continue;
            }
            const int64_t top = p + co.r / grid;
            if (!in_band(k + co.L, top)) continue;
            const double total = v + head[which] + usd(last_price[which], g);
            if (total < cost_at(k + co.L, to, top)) {
              cost_at(k + co.L, to, top) = total;
              pred_at(k + co.L, to, top) = pred_byte(kChangedOver, which == 1, z);
            }
          }
        }
      for (int64_t p = l; p < l + w; ++p) {
        const double v = cost_at(k, idle, p);
        if (v == kNoCost || !in_band(k + 1, p)) continue;
        if (v < cost_at(k + 1, idle, p)) {
          cost_at(k + 1, idle, p) = v;
          pred_at(k + 1, idle, p) = kIdled;
        }
      }
      // Running: another tick of work.
      for (int kind : {kSpot, kOnDemand}) {
        const int slot = slot_of(z, kind);
        if (kind == kSpot && !spot_up(z, k)) continue;
        const double per_hour = price(slot, k);
        for (int64_t p = l; p < l + w; ++p) {
          const double v = cost_at(k, slot, p);
          if (v == kNoCost) continue;
          const int64_t left = work - p * grid;
          if (left <= g) {
            const double total = v + usd(per_hour, left);
            if (t + left <= deadline && total < best.cost) best = Finish{total, k, slot, slot, false, false, p, t + left};
            continue;
          }
          const int64_t top = p + gu;
          if (!in_band(k + 1, top)) continue;
          const double total = v + usd(per_hour, g);
          if (total < cost_at(k + 1, slot, top)) {
            cost_at(k + 1, slot, top) = total;
            pred_at(k + 1, slot, top) = kContinued;
          }
        }
      }
    }
    // This tick's slot of the ring is reused for tick k + ring.
    std::fill_n(cost.begin() + static_cast<std::ptrdiff_t>((k % ring) * slots * max_width), slots * max_width, kNoCost);
  }
  if (best.cost == kNoCost)
    return make_error(ErrorCode::invalid_argument, "no schedule meets the deadline", "deadline_hours");

  // The way back, writing what ran in each tick (and where).
  OptimalPlan plan;
  plan.cost_usd = best.cost;
  plan.finish_hours = static_cast<double>(best.finish_ms) / kMillisPerHour;
  plan.cells = offset.back();
  const int64_t span = best.after_changeover ? (best.moved ? moved.L : same.L) : 1;
  plan.decisions.assign(static_cast<size_t>(best.tick + span), Capacity::none);
  plan.zones.assign(static_cast<size_t>(best.tick + span), 0);
  auto mark = [&](int64_t tick, int slot) {
    plan.decisions[static_cast<size_t>(tick)] = capacity_of(kind_of(slot));
    plan.zones[static_cast<size_t>(tick)] = static_cast<size_t>(zone_of(slot));
  };
  for (int64_t i = 0; i < span; ++i) mark(best.tick + i, best.slot);
  int64_t k = best.tick, p = best.progress;
  int slot = best.after_changeover ? best.from_slot : best.slot;
  for (;;) {
    const uint8_t byte = pred_at(k, slot, p);
    const uint8_t how = byte & 7;
    if (how == kStart) break;
    switch (how) {
      case kIdled: --k; break;  // that tick ran nothing (already none)
      case kStoppedSpot: slot = slot_of(zone_of(slot), kSpot); break;
      case kStoppedDemand: slot = slot_of(zone_of(slot), kOnDemand); break;
      case kContinued:
        --k;
        p -= gu;
        mark(k, slot);
        break;
      case kChangedOver: {
        const Changeover& co = (byte & kMovedBit) ? moved : same;
        for (int64_t i = 1; i <= co.L; ++i) mark(k - i, slot);
        k -= co.L;
        p -= co.r / grid;
        slot = slot_of(byte >> 4, kIdle);
        break;
      }
      default:
        return make_error(ErrorCode::internal, "optimal plan: a state on the way back was never reached", "");
    }
  }
  return plan;
}

Capacity OptimalPolicy::choose(const ProgressState& s) {
  const auto tick = static_cast<size_t>(std::llround(s.elapsed_hours / tick_hours_));
  // Past the plan (it cannot happen when the plan is played on its own trace): finish on-demand.
  if (tick >= plan_.decisions.size()) return Capacity::on_demand;
  if (plan_.decisions[tick] == Capacity::spot) choose_spot_zone(plan_.zones[tick]);
  return plan_.decisions[tick];
}

Expected<std::unique_ptr<OptimalPolicy>> make_optimal_policy(const SpotTrace& spot, const SimulationConfig& config) {
  return make_optimal_zones_policy(std::span<const SpotTrace>(&spot, 1), config);
}

Expected<std::unique_ptr<OptimalPolicy>> make_optimal_zones_policy(std::span<const SpotTrace> zones,
                                                                  const SimulationConfig& config) {
  auto plan = plan_optimal_zones(zones, config);
  if (!plan) return plan.error();
  return std::make_unique<OptimalPolicy>(std::move(*plan), zones.front().gap_hours());
}

}  // namespace jobctl::scheduler
