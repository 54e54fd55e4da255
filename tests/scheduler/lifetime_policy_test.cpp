// The "lifetime" policy (scheduler/lifetime_policy.h): what it learns from the past, that it
// learns from the past only (a trace cut at the decision's tick decides the same), its moves
// between zones and its guards.
#include "scheduler/lifetime_policy.h"

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "scheduler/deadline_policy.h"
#include "scheduler/optimal_policy.h"
#include "scheduler/spot_simulator.h"

namespace jobctl::scheduler {
namespace {

// Forwards to a policy and records each decision, tick by tick (the zone of spot with it).
class Recorder : public DeadlinePolicy {
 public:
  explicit Recorder(std::unique_ptr<DeadlinePolicy> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  std::vector<std::pair<Capacity, size_t>> decisions;

 protected:
  void on_reset() override {
    inner_->reset();
    decisions.clear();
  }
  Capacity choose(const ProgressState& s) override {
    const Capacity c = inner_->decide(s);
    choose_spot_zone(inner_->spot_zone());
    decisions.emplace_back(c, c == Capacity::spot ? inner_->spot_zone() : s.zone);
    return c;
  }
  bool guarded() const override { return false; }  // the inner policy's guard has run

 private:
  std::unique_ptr<DeadlinePolicy> inner_;
};

// Runs of availability and outage, geometric, as in real traces.
SpotTrace runs_trace(std::mt19937& rng, size_t n, double gap_seconds, double p_end) {
  SpotTrace t;
  t.gap_seconds = gap_seconds;
  std::geometric_distribution<int> run(p_end);
  bool up = rng() % 2 == 0;
  while (t.available.size() < n) {
    for (int i = run(rng) + 1; i > 0 && t.available.size() < n; --i) t.available.push_back(up ? 1 : 0);
    up = !up;
  }
  return t;
}

SimulationConfig paper(double compute, double factor) {
  SimulationConfig c;
  c.compute_hours = compute;
  c.deadline_hours = compute * factor;
  c.changeover_hours = 0.3;
  c.move_hours = 0.02;
  c.spot_usd_per_hour = 0.92;
  c.on_demand_usd_per_hour = 3.06;
  return c;
}

// No look-ahead: for every online policy, one zone and two, the decision at tick k with the
// traces cut just after k equals the decision at k with the whole traces.
TEST(NoLookAhead, ATraceCutAtTheDecisionDecidesTheSame) {
  std::mt19937 rng(20261201);
  for (size_t nz : {1u, 2u})
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<SpotTrace> zones;
      for (size_t z = 0; z < nz; ++z) zones.push_back(runs_trace(rng, 200, 600, 0.12));
      const SimulationConfig c = paper(12, 1.5);
      for (auto name : deadline_policy_names()) {
        if (name == "local-first") continue;  // no spot
        Recorder whole(make_deadline_policy(name));
        auto full = simulate_zones(zones, c, whole);
        ASSERT_TRUE(full) << full.error().message;
        ASSERT_GT(whole.decisions.size(), 20u);
        for (size_t k = 0; k < whole.decisions.size(); k += 7) {
          std::vector<SpotTrace> cut = zones;
          for (auto& z : cut) z.available.resize(k + 1);
          Recorder part(make_deadline_policy(name));
          auto r = simulate_zones(cut, c, part);
          ASSERT_TRUE(r) << r.error().message;
          ASSERT_GT(part.decisions.size(), k) << name;
          EXPECT_EQ(part.decisions[k], whole.decisions[k]) << name << ", " << nz << " zones, trial " << trial
                                                           << ", tick " << k;
        }
      }
    }
}

// The check can fail: the omniscient optimum, which plans from the whole trace, decides
// differently on a cut one.
TEST(NoLookAhead, TheOptimumFailsIt) {
  std::mt19937 rng(20261201);
  std::vector<SpotTrace> zones{runs_trace(rng, 200, 600, 0.12), runs_trace(rng, 200, 600, 0.12)};
  const SimulationConfig c = paper(12, 1.5);
  auto whole = make_optimal_zones_policy(zones, c);
  ASSERT_TRUE(whole);
  int differ = 0;
  for (size_t k = 10; k < 100; k += 10) {
    std::vector<SpotTrace> cut = zones;
    for (auto& z : cut) z.available.resize(k + 1);
    auto part = make_optimal_zones_policy(cut, c);
    ASSERT_TRUE(part);
    const auto& a = (*whole)->plan().decisions;
    const auto& b = (*part)->plan().decisions;
    differ += k < a.size() && k < b.size() && a[k] != b[k];
  }
  EXPECT_GT(differ, 0);
}

TEST(LifetimePolicy, LearnsTheRemainingLifeOfAWindowFromThePast) {
  LifetimePolicy p;
  p.reset();
  ProgressState s;
  s.deadline_hours = 100;
  s.total_compute_hours = 50;
  s.changeover_hours = 0.3;
  s.decision_period_hours = 1;
  // Windows of 1 h and 5 h (up, down, up x5, down).
  const int up[] = {1, 0, 1, 1, 1, 1, 1, 0, 0};
  for (size_t k = 0; k < std::size(up); ++k) {
    s.elapsed_hours = static_cast<double>(k);
    s.spot_available = up[k] == 1;
    s.current = Capacity::none;
    (void)p.decide(s);
  }
  // Age 0: (prior 2 + 1 + 5) / 3; age 2: only the 5 h window outlived it: (2 + 3) / 2.
  EXPECT_NEAR(p.expected_remaining_life(0, 0), 8.0 / 3, 1e-9);
  EXPECT_NEAR(p.expected_remaining_life(0, 2), 2.5, 1e-9);
  EXPECT_NEAR(p.expected_remaining_life(0, 6), 2.0, 1e-9);  // the prior alone
}

TEST(LifetimePolicy, MovesToAnotherZoneWhenItsZoneIsReclaimed) {
  // Zone 0 up for 2 h then gone; zone 1 up all along.
  std::vector<SpotTrace> zones(2);
  for (auto& z : zones) z.gap_seconds = 600;
  zones[0].available.assign(12, 1);
  zones[0].available.resize(600, 0);
  zones[1].available.assign(600, 1);
  const SimulationConfig c = paper(48, 1.5);
  auto p = make_deadline_policy("lifetime");
  auto r = simulate_zones(zones, c, *p);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->deadline_met);
  EXPECT_EQ(r->preemptions, 1);
  EXPECT_EQ(r->moves, 1);
  EXPECT_DOUBLE_EQ(r->on_demand_hours, 0);
  // Two changeovers, the second with the checkpoint's transfer.
  EXPECT_NEAR(r->changeover_hours, 0.3 + 0.32, 1e-9);
  EXPECT_NEAR(r->cost_usd, (48 + 0.62) * 0.92, 1e-9);
}

SpotTrace runs_of(double gap_seconds, std::initializer_list<std::pair<int, size_t>> runs) {
  SpotTrace t;
  t.gap_seconds = gap_seconds;
  for (auto [up, ticks] : runs) t.available.insert(t.available.end(), ticks, static_cast<int32_t>(up));
  return t;
}

// An outage at the start that the slack can wait out: no on-demand at all (starting on demand
// there would leave a short job no money to return to spot under the cost guard).
TEST(LifetimePolicy, WaitsOutAnOutageTheSlackCovers) {
  const SpotTrace t = runs_of(600, {{0, 12}, {1, 200}});  // 2 h down, then up
  const SimulationConfig c = paper(16, 1.5);
  auto p = make_deadline_policy("lifetime");
  auto r = simulate(t, c, *p);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->deadline_met);
  EXPECT_DOUBLE_EQ(r->on_demand_hours, 0);
  EXPECT_NEAR(r->idle_hours, 2, 1e-9);
}

// 10 h of spot, a 30 h outage, spot again: spot cannot finish 48 h of compute by 72 h, so
// on-demand work is bought in the outage and the job returns to spot after it — cheaper than
// waiting until the deadline forces on-demand for good (greedy), which forfeits the last window.
TEST(LifetimePolicy, BuysOnDemandInALongOutageAndReturnsToSpot) {
  const SpotTrace t = runs_of(600, {{1, 60}, {0, 180}, {1, 300}});
  const SimulationConfig c = paper(48, 1.5);
  auto p = make_deadline_policy("lifetime");
  auto r = simulate(t, c, *p);
  auto g = make_deadline_policy("greedy");
  auto greedy = simulate(t, c, *g);
  ASSERT_TRUE(r && greedy);
  EXPECT_TRUE(r->deadline_met);
  EXPECT_GT(r->on_demand_hours, 0);
  ASSERT_FALSE(r->segments.empty());
  EXPECT_EQ(r->segments.back().capacity, Capacity::spot);
  for (const auto& seg : r->segments)
    if (seg.capacity == Capacity::on_demand)  // in the outage, and until the window has been up 2 d (4 ticks)
      EXPECT_LE(seg.end_hours, 40 + 4.0 / 6 + 1e-9) << "on demand only in the outage";
  EXPECT_LT(r->cost_usd, greedy->cost_usd);
}

// 15 h of flickers (10 min up, 20 min down) and then spot for good: the flickers must not spend
// the cost guard's allowance, or the long window would be out of reach.
TEST(LifetimePolicy, FlickersDoNotSpendTheCostAllowance) {
  SpotTrace t;
  t.gap_seconds = 600;
  for (int i = 0; i < 30; ++i) t.available.insert(t.available.end(), {1, 0, 0});
  t.available.insert(t.available.end(), 600, 1);
  const SimulationConfig c = paper(48, 2.0);
  auto p = make_deadline_policy("lifetime");
  auto r = simulate(t, c, *p);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->deadline_met);
  EXPECT_DOUBLE_EQ(r->on_demand_hours, 0);
  EXPECT_GT(r->savings, 0.6);
}

// An adversary that sees each decision and reclaims every spot instance one tick after it starts
// (before its changeover is done, so spot never makes progress) and offers spot again at once,
// in each zone the job is not on: every start wastes its changeover, and waiting is always
// tempting. The trace is built tick by tick — a decision depends on the past only — and the whole
// run must still meet its deadline and stay within the cost guard.
TEST(LifetimePolicy, MeetsTheDeadlineAgainstAnAdversaryThatReclaimsEveryStart) {
  for (size_t nz : {1u, 2u})
    for (double factor : {1.1, 1.5, 2.0}) {
      const SimulationConfig c = paper(12, factor);
      std::vector<SpotTrace> zones(nz);
      for (auto& z : zones) {
        z.gap_seconds = 600;
        z.available = {1};
      }
      const size_t ticks = static_cast<size_t>(std::ceil((c.deadline_hours + c.compute_hours) * 6)) + 10;
      for (size_t k = 0; k + 1 < ticks; ++k) {
        Recorder rec(make_deadline_policy("lifetime"));
        ASSERT_TRUE(simulate_zones(zones, c, rec));
        const bool on_spot = k < rec.decisions.size() && rec.decisions[k].first == Capacity::spot;
        for (size_t z = 0; z < nz; ++z) zones[z].available.push_back(on_spot && rec.decisions[k].second == z ? 0 : 1);
      }
      auto p = make_deadline_policy("lifetime");
      auto r = simulate_zones(zones, c, *p);
      ASSERT_TRUE(r);
      EXPECT_TRUE(r->deadline_met) << nz << " zones, factor " << factor;
      EXPECT_GT(r->preemptions, 0) << "the adversary reclaimed nothing";
      EXPECT_LE(r->cost_usd, (1 + LifetimeOptions{}.max_loss) * r->on_demand_cost_usd + 1e-9)
          << nz << " zones, factor " << factor;
    }
}

// Where spot flickers (windows shorter than the changeover), the cost guard keeps every run
// within max_loss of all on-demand, and every deadline is met.
TEST(LifetimePolicy, NeverCostsMuchMoreThanOnDemand) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    const SpotTrace t = runs_trace(rng, 400, 600, trial % 2 ? 0.7 : 0.4);
    for (double factor : {1.1, 1.5, 2.0}) {
      const SimulationConfig c = paper(24, factor);
      auto p = make_deadline_policy("lifetime");
      auto r = simulate(t, c, *p);
      ASSERT_TRUE(r);
      EXPECT_TRUE(r->deadline_met) << "trial " << trial << " factor " << factor;
      EXPECT_LE(r->cost_usd, (1 + LifetimeOptions{}.max_loss) * r->on_demand_cost_usd + 1e-9)
          << "trial " << trial << " factor " << factor;
    }
  }
}

}  // namespace
}  // namespace jobctl::scheduler
