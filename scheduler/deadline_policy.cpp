#include "scheduler/deadline_policy.h"

#include <algorithm>
#include <array>

#include "scheduler/adaptive_progress.h"
#include "scheduler/baseline_policies.h"
#include "scheduler/lifetime_policy.h"
#include "scheduler/uniform_progress.h"

namespace jobctl::scheduler {

namespace {
constexpr double kEps = 1e-9;
constexpr std::array<std::string_view, 6> kPolicyNames{"up", "greedy", "on-demand", "local-first", "adaptive",
                                                     "lifetime"};
}  // namespace

std::string_view to_string(Capacity c) {
  switch (c) {
    case Capacity::none: return "none";
    case Capacity::spot: return "spot";
    case Capacity::on_demand: return "on-demand";
    case Capacity::local: return "local";
  }
  return "none";
}

bool can_defer_on_demand(const ProgressState& s, Capacity next) { return can_defer_on_demand(s, next, s.zone); }

bool can_defer_on_demand(const ProgressState& s, Capacity next, size_t next_zone) {
  const double g = s.decision_period_hours;
  const double d = s.changeover_hours;
  const double c = s.remaining_compute();
  double progress = 0;  // guaranteed progress over the period
  if (next == Capacity::spot || next == Capacity::local) {
    const bool same = s.current == next && (next != Capacity::spot || next_zone == s.zone);
    const double pending = same ? s.pending_changeover_hours : next == Capacity::spot ? s.changeover_in(next_zone) : d;
    progress = std::max(0.0, g - pending);
  } else if (next == Capacity::on_demand) {
    return true;
  }
  return s.elapsed_hours + g + d + (c - progress) <= s.deadline_hours + kEps;
}

void DeadlinePolicy::reset() {
  committed_ = false;
  spot_zone_ = 0;
  last_ = Capacity::none;
  on_reset();
}

Capacity DeadlinePolicy::decide(const ProgressState& s) {
  last_ = decide_unrecorded(s);
  return last_;
}

Capacity DeadlinePolicy::decide_unrecorded(const ProgressState& s) {
  spot_zone_ = s.zone;
  if (committed_) return Capacity::on_demand;
  Capacity c = choose(s);
  if (committed_) return Capacity::on_demand;
  if (spot_zone_ >= s.zones()) spot_zone_ = s.zone;
  if (c == Capacity::spot && !s.spot_in(spot_zone_)) c = Capacity::none;
  if (c != Capacity::spot) spot_zone_ = s.zone;
  if (c == Capacity::local && !s.local_available) c = Capacity::none;
  if (guarded() && c != Capacity::on_demand && !can_defer_on_demand(s, c, spot_zone_)) {
    spot_zone_ = s.zone;
    committed_ = true;
    return Capacity::on_demand;
  }
  return c;
}

std::unique_ptr<DeadlinePolicy> make_deadline_policy(std::string_view name) {
  if (name == "up" || name == "uniform-progress") return std::make_unique<UniformProgressPolicy>();
  if (name == "greedy") return std::make_unique<GreedyPolicy>();
  if (name == "on-demand") return std::make_unique<OnDemandPolicy>();
  if (name == "local-first") return std::make_unique<LocalFirstPolicy>();
  if (name == "adaptive") return std::make_unique<AdaptiveProgressPolicy>();
  if (name == "lifetime") return std::make_unique<LifetimePolicy>();
  return nullptr;
}

std::span<const std::string_view> deadline_policy_names() { return kPolicyNames; }

}  // namespace jobctl::scheduler
