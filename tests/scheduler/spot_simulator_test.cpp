#include "scheduler/spot_simulator.h"

#include <random>
#include <string>

#include <gtest/gtest.h>

#include "scheduler/simulation_json.h"

namespace jobctl::scheduler {
namespace {

// Ticks of 0.125 h and a changeover of 0.25 h: every figure below is exact in binary.
SpotTrace trace(std::vector<int32_t> data) {
  SpotTrace t;
  t.gap_seconds = 450;
  t.available = std::move(data);
  return t;
}

SimulationConfig config(double compute, double deadline) {
  SimulationConfig c;
  c.compute_hours = compute;
  c.deadline_hours = deadline;
  c.changeover_hours = 0.25;
  c.spot_usd_per_hour = 1.0;
  c.on_demand_usd_per_hour = 4.0;
  return c;
}

SimulationResult run(const SpotTrace& t, const SimulationConfig& c, std::string_view policy,
                     const SpotTrace* local = nullptr) {
  auto p = make_deadline_policy(policy);
  auto r = simulate(t, c, *p, local);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? *r : SimulationResult{};
}

TEST(SpotSimulator, AlwaysAvailableSpot) {
  const auto r = run(trace(std::vector<int32_t>(40, 1)), config(1, 2), "greedy");
  EXPECT_TRUE(r.finished);
  EXPECT_TRUE(r.deadline_met);
  EXPECT_DOUBLE_EQ(r.finish_hours, 1.25);      // changeover + compute
  EXPECT_DOUBLE_EQ(r.spot_hours, 1.25);
  EXPECT_DOUBLE_EQ(r.cost_usd, 1.25);
  EXPECT_DOUBLE_EQ(r.on_demand_cost_usd, 5.0);  // (1 + 0.25) * 4
  EXPECT_DOUBLE_EQ(r.savings, 0.75);
  EXPECT_EQ(r.changeovers, 1);
  EXPECT_EQ(r.preemptions, 0);
}

TEST(SpotSimulator, NoSpotGreedyWaitsThenOnDemand) {
  // Greedy waits while remaining time >= remaining compute + 2d: until t = 0.625 (1.375 < 1.5).
  const auto r = run(trace(std::vector<int32_t>(40, 0)), config(1, 2), "greedy");
  EXPECT_TRUE(r.deadline_met);
  EXPECT_DOUBLE_EQ(r.idle_hours, 0.625);
  EXPECT_DOUBLE_EQ(r.finish_hours, 1.875);
  EXPECT_DOUBLE_EQ(r.on_demand_hours, 1.25);
  EXPECT_DOUBLE_EQ(r.cost_usd, 5.0);
  EXPECT_DOUBLE_EQ(r.savings, 0.0);
}

TEST(SpotSimulator, PreemptionCostsAChangeover) {
  // Spot for 0.5 h (0.25 of it changeover), then reclaimed; back after 0.25 h.
  std::vector<int32_t> data(40, 1);
  data[4] = data[5] = 0;
  const auto r = run(trace(data), config(1, 3), "greedy");
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_EQ(r.changeovers, 2);
  EXPECT_DOUBLE_EQ(r.changeover_hours, 0.5);
  EXPECT_DOUBLE_EQ(r.idle_hours, 0.25);
  EXPECT_DOUBLE_EQ(r.spot_hours, 1.5);   // 0.25 + 0.25 work, then 0.25 + 0.75 work
  EXPECT_DOUBLE_EQ(r.finish_hours, 1.75);
  EXPECT_DOUBLE_EQ(r.cost_usd, 1.5);
}

TEST(SpotSimulator, OnDemandPolicyIsTheBaseline) {
  const auto r = run(trace({1, 0, 1, 0}), config(3, 4), "on-demand");
  EXPECT_DOUBLE_EQ(r.cost_usd, r.on_demand_cost_usd);
  EXPECT_DOUBLE_EQ(r.savings, 0);
  EXPECT_FALSE(r.trace_covers_deadline);  // 0.5 h of trace for a 4 h deadline
  EXPECT_TRUE(r.deadline_met);
}

TEST(SpotSimulator, TracePricesAndLocalCapacity) {
  SpotTrace t = trace(std::vector<int32_t>(40, 1));
  t.prices.assign(40, 0.5);
  auto c = config(1, 2);
  c.spot_price_from_trace = true;
  EXPECT_DOUBLE_EQ(run(t, c, "greedy").cost_usd, 0.625);
  // A local GPU free for the first hour, then taken back: local-first runs there, then on-demand.
  SpotTrace local = trace(std::vector<int32_t>(40, 0));
  for (int i = 0; i < 8; ++i) local.available[static_cast<size_t>(i)] = 1;
  c.local_usd_per_hour = 0.5;
  const auto r = run(t, config(2, 4), "local-first", &local);
  EXPECT_DOUBLE_EQ(r.local_hours, 1.0);       // 0.25 changeover + 0.75 work
  EXPECT_DOUBLE_EQ(r.on_demand_hours, 1.5);   // 0.25 changeover + 1.25 work
  EXPECT_DOUBLE_EQ(r.spot_hours, 0);
  EXPECT_DOUBLE_EQ(r.finish_hours, 2.5);
}

TEST(SpotSimulator, AccountingHoldsOnRandomTraces) {
  std::mt19937 rng(7);
  for (int n = 0; n < 30; ++n) {
    // Alternating up/down stretches of random length.
    std::vector<int32_t> data;
    bool up = rng() % 2;
    while (data.size() < 400) {
      const size_t len = 1 + rng() % 30;
      data.insert(data.end(), len, up ? 1 : 0);
      up = !up;
    }
    const auto t = trace(data);
    for (auto name : deadline_policy_names()) {
      auto c = config(20, 20 + 0.25 + static_cast<double>(rng() % 40) * 0.125);
      const auto r = run(t, c, name);
      EXPECT_TRUE(r.deadline_met) << name << " trace " << n;
      EXPECT_NEAR(r.cost_usd, r.spot_hours * 1.0 + r.on_demand_hours * 4.0, 1e-9);
      EXPECT_NEAR(r.spot_hours + r.on_demand_hours - r.changeover_hours, 20.0, 1e-9) << name;
      EXPECT_NEAR(r.spot_hours + r.on_demand_hours + r.idle_hours, r.finish_hours, 1e-9) << name;
      EXPECT_GE(r.cost_usd, 0);
    }
  }
}

TEST(SpotSimulator, BadConfigIsAnError) {
  const auto t = trace({1, 1});
  auto p = make_deadline_policy("up");
  auto c = config(10, 10.1);  // < 10 + 0.25
  auto r = simulate(t, c, *p);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "deadline_hours");
  c = config(1, 2);
  c.start_hours = 5;
  EXPECT_EQ(simulate(t, c, *p).error().field, "start_hours");
  c = config(1, 2);
  c.on_demand_usd_per_hour = 0;
  EXPECT_EQ(simulate(t, c, *p).error().field, "on_demand_usd_per_hour");
  c = config(0, 2);
  EXPECT_EQ(simulate(t, c, *p).error().field, "compute_hours");
  c = config(1, 2);
  c.changeover_hours = -1;
  EXPECT_EQ(simulate(t, c, *p).error().field, "changeover_hours");
}

TEST(SpotSimulator, Json) {
  const auto r = run(trace(std::vector<int32_t>(40, 1)), config(1, 2), "up");
  const auto j = simulation_json(r, true);
  for (const char* k : {"cost_usd", "on_demand_cost_usd", "savings", "deadline_met", "spot_hours", "on_demand_hours"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["policy"], "up");
  ASSERT_EQ(j["segments"].size(), 1u);
  EXPECT_EQ(j["segments"][0]["capacity"], "spot");
  EXPECT_FALSE(simulation_json(r).contains("segments"));
}

}  // namespace
}  // namespace jobctl::scheduler
