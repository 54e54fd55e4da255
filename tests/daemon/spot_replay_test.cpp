// One policy, two drivers: the daemon's placement service (with its SpotDeadlines) driven through a
// real spot trace of ../shared/data tick by tick on a manual clock, against scheduler::simulate()
// (what `jobctl simulate` runs) with the same policy, trace and figures. Skips when the data folder
// is absent (fails under CI=true: tests/support/shared_data.h).
//
// The harness plays the cloud and the worker with simulate()'s model: when the trace says no spot,
// every spot offer is set aside until the next tick and a job running on spot is reclaimed
// (preempted, requeued); a job the placement service placed is launched on an instance of the
// chosen kind at once, whose first changeover_hours make no progress; a running job advances by
// the tick's gap of compute, reported by heartbeat; a job asked to move gives itself back at once
// and is placed again in the same tick (jobctld's placement thread places a requeued job within
// milliseconds, far inside a tick). The daemon re-evaluates once per tick (reevaluate_s = the gap).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "daemon/placement/placement_service.h"
#include "scheduler/deadline_policy.h"
#include "scheduler/spot_simulator.h"
#include "tests/daemon/placement_support.h"
#include "tests/support/spot_traces.h"

namespace jobctl::daemon::testing {
namespace {

using nlohmann::json;
using scheduler::Capacity;

constexpr int64_t kTotalSteps = 1'000'000;  // progress resolution of the heartbeats

// A V100 job of some hours (the epochs set its length), with a deadline when given.
std::string v100_job(int epochs, std::optional<double> deadline_hours) {
  std::string placement = deadline_hours ? R"(,"placement":{"deadline_hours":)" + std::to_string(*deadline_hours) + "}"
                                         : std::string();
  return R"({"model":{"kind":"mlp","hidden":[4096,4096]},"data":{"dataset":"synthetic","samples":1000000,)"
         R"("features":784,"classes":10},"train":{"epochs":)" +
         std::to_string(epochs) + R"(},"resources":{"gpu":"V100"})" + placement + "}";
}

// Per tick, what the job ran on, and what it was billed.
struct Run {
  std::vector<Capacity> ticks;
  double spot_hours = 0, on_demand_hours = 0, cost_usd = 0;
  bool finished = false;
  double finish_hours = 0;
};

struct Scenario {
  std::string trace;     // under spot-traces/
  size_t start_tick = 0;  // where in the trace the job starts
  double compute_ratio = 0;  // R0 / C0
  int epochs = 0;
  std::string policy;
};

// The raw prices of the offer a placement chose (the placement's own $/h for spot carries the
// interruption cost; billing does not).
double offer_price(PlacementFixture& f, const json& chosen) {
  for (const auto& o : f.placement->offers())
    if (o.instance_type == chosen["instance_type"] && o.region == chosen["region"])
      return chosen["option"] == "spot" ? o.spot_usd_per_hour.value_or(0) : o.on_demand_usd_per_hour;
  ADD_FAILURE() << "no offer for " << chosen.dump();
  return 0;
}

// Drives the daemon through the trace; fills the figures from what its placement chose.
Run replay_in_daemon(const scheduler::SpotTrace& trace, const Scenario& sc, scheduler::SimulationConfig& fig) {
  placement::PlacementSettings settings;
  settings.cloud_provider = "sim";
  settings.clouds = {"aws"};
  settings.spot_interruptions_per_hour = 0.1;  // the rate the simulator's figures are worked out with
  settings.reevaluate_s = static_cast<int>(trace.gap_seconds);
  settings.provision_hours = trace.gap_hours();  // d: one tick
  settings.deadline_policy = sc.policy;
  PlacementFixture f(settings);
  fig.start_hours = static_cast<double>(sc.start_tick) * trace.gap_hours();
  fig.changeover_hours = settings.provision_hours;
  // C0 from the daemon's own estimate of the job — its hours on the fastest on-demand option, as
  // the daemon tells its policy — and R0 from it.
  auto quote = f.placement->quote(v100_job(sc.epochs, std::nullopt));
  EXPECT_TRUE(quote);
  if (!quote) return {};
  fig.compute_hours = 0;
  for (const auto& c : (*quote)["candidates"])
    if (c["option"] == "on_demand" && !c.contains("rejection"))
      fig.compute_hours = fig.compute_hours == 0 ? c["estimated_hours"].get<double>()
                                                 : std::min(fig.compute_hours, c["estimated_hours"].get<double>());
  EXPECT_GT(fig.compute_hours, 0);
  fig.deadline_hours = std::round(fig.compute_hours * sc.compute_ratio * 1000) / 1000;

  const int64_t gap_ms = static_cast<int64_t>(trace.gap_seconds * 1000);
  const double g = trace.gap_hours(), d = fig.changeover_hours, c0 = fig.compute_hours;
  auto set_spot_aside = [&] {
    for (const auto& o : f.placement->offers())
      if (o.spot_usd_per_hour) f.placement->set_aside(o.instance_type, o.region, true, f.clock.steady_ms() + gap_ms);
  };
  if (!trace.available_at(sc.start_tick)) set_spot_aside();
  const int64_t id = f.submit(v100_job(sc.epochs, fig.deadline_hours));

  Run run;
  struct Lease {
    int64_t worker = 0, epoch = 0;
    Capacity on = Capacity::none;
  };
  std::optional<Lease> lease;
  double done = 0, pending = 0;
  int instances = 0;
  auto beat = [&]() -> Expected<jobs::HeartbeatReply> {
    jobs::HeartbeatReport hb;
    hb.lease = {lease->worker, lease->epoch};
    hb.progress_json =
        json{{"step", std::llround(done / c0 * kTotalSteps)}, {"total_steps", kTotalSteps}}.dump();
    return f.svc->heartbeat(id, hb);
  };
  auto give_back = [&](const std::string& why) {
    EXPECT_TRUE(f.svc->preempt(id, jobs::PreemptionReport{{lease->worker, lease->epoch}, why}));
    lease.reset();
  };
  const size_t max_ticks = static_cast<size_t>(std::ceil((fig.deadline_hours + c0) / g)) + 10;
  for (size_t k = 0; k < max_ticks && !run.finished; ++k) {
    const bool spot_up = trace.available_at(sc.start_tick + k);
    if (!spot_up) {
      set_spot_aside();
      if (lease && lease->on == Capacity::spot) give_back("spot instance reclaimed");
    }
    EXPECT_TRUE(f.placement->reevaluate());
    if (lease) {
      auto reply = beat();
      EXPECT_TRUE(reply);
      if (reply && reply->move) {
        give_back("moved by jobctld");
        EXPECT_TRUE(f.placement->reevaluate());
      }
    }
    const store::JobRow row = f.job(id);
    EXPECT_NE(row.state, store::JobState::failed) << row.error.value_or("");
    if (!lease && row.state == store::JobState::placed) {
      const json chosen = f.placement_of(id)["chosen"];
      const bool spot = chosen["option"] == "spot";
      (spot ? fig.spot_usd_per_hour : fig.on_demand_usd_per_hour) = offer_price(f, chosen);
      if (spot && fig.on_demand_usd_per_hour == 0) {  // a run all on spot: its offer's on-demand price
        json on_demand = chosen;
        on_demand["option"] = "on_demand";
        fig.on_demand_usd_per_hour = offer_price(f, on_demand);
      }
      const std::string instance = "i-" + std::to_string(++instances);
      const int64_t w = f.add_worker({{"Tesla V100-SXM2-16GB", 16384}},
                                     jobs::WorkerInstance{instance, "sim", chosen["instance_type"], spot});
      EXPECT_EQ(f.lease(w), id);
      lease = Lease{w, f.job(id).lease_epoch, spot ? Capacity::spot : Capacity::on_demand};
      pending = d;
      EXPECT_TRUE(beat());  // resumed from its checkpoint: running, nothing new yet
    }
    const Capacity on = lease ? lease->on : Capacity::none;
    run.ticks.push_back(on);
    double used = g;
    if (on != Capacity::none) {
      const double overhead = std::min(pending, g);
      pending -= overhead;
      const double work = std::min(g - overhead, c0 - done);
      used = overhead + work;
      done += work;
      (on == Capacity::spot ? run.spot_hours : run.on_demand_hours) += used;
    }
    f.clock.advance_ms(gap_ms);
    if (lease) {
      EXPECT_TRUE(beat());
    }
    if (done >= c0 - 1e-9) {
      run.finished = true;
      run.finish_hours = static_cast<double>(k) * g + used;
    }
  }
  run.cost_usd = run.spot_hours * fig.spot_usd_per_hour + run.on_demand_hours * fig.on_demand_usd_per_hour;
  return run;
}

Run simulate_ticks(const scheduler::SpotTrace& trace, const Scenario& sc, const scheduler::SimulationConfig& c) {
  auto policy = scheduler::make_deadline_policy(sc.policy);
  auto r = scheduler::simulate(trace, c, *policy);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  Run run;
  if (!r) return run;
  const double g = trace.gap_hours();
  for (const auto& seg : r->segments)  // the last tick of a segment may be partly used
    run.ticks.insert(run.ticks.end(), static_cast<size_t>(std::ceil((seg.end_hours - seg.start_hours) / g - 1e-6)),
                     seg.capacity);
  run.spot_hours = r->spot_hours;
  run.on_demand_hours = r->on_demand_hours;
  run.cost_usd = r->cost_usd;
  run.finished = r->finished;
  run.finish_hours = r->finish_hours;
  return run;
}

std::string letters(const std::vector<Capacity>& ticks) {
  std::string s;
  for (Capacity c : ticks) s += c == Capacity::spot ? 'S' : c == Capacity::on_demand ? 'D' : '.';
  return s;
}

class SpotReplay : public ::testing::Test {
 protected:
  void SetUp() override { JOBCTL_NEED_SHARED_DATA("spot-traces/availability"); }
};

// `first_wait`: where the simulator first waited (npos: never).
void replay_and_compare(const Scenario& sc, size_t* first_wait = nullptr) {
  const auto trace = jobctl::testing::load_spot_trace(jobctl::testing::spot_traces_dir() / sc.trace);
  ASSERT_GT(trace.available.size(), sc.start_tick);
  scheduler::SimulationConfig fig;  // what both drivers share, filled from the daemon's choices
  const Run daemon = replay_in_daemon(trace, sc, fig);
  const Run sim = simulate_ticks(trace, sc, fig);
  std::string market;
  for (size_t k = 0; k < std::max(daemon.ticks.size(), sim.ticks.size()); ++k)
    market += trace.available_at(sc.start_tick + k) ? '1' : '0';
  std::printf("%s C0 %.3f h R0 %.3f h d %.3f h, spot $%.3f/h on-demand $%.3f/h\n  trace  %s\n  daemon %s  $%.2f "
              "spot %.2f h od %.2f h finish %.2f h\n  sim    %s  $%.2f spot %.2f h od %.2f h finish %.2f h\n",
              sc.policy.c_str(), fig.compute_hours, fig.deadline_hours, fig.changeover_hours, fig.spot_usd_per_hour,
              fig.on_demand_usd_per_hour, market.c_str(), letters(daemon.ticks).c_str(), daemon.cost_usd,
              daemon.spot_hours, daemon.on_demand_hours, daemon.finish_hours, letters(sim.ticks).c_str(),
              sim.cost_usd, sim.spot_hours, sim.on_demand_hours, sim.finish_hours);
  ASSERT_TRUE(daemon.finished);
  ASSERT_TRUE(sim.finished);
  EXPECT_LE(daemon.finish_hours, fig.deadline_hours + 1e-9);
  EXPECT_LE(sim.finish_hours, fig.deadline_hours + 1e-9);
  // The same decisions tick for tick — waits for spot included: while no spot offer can be
  // launched, the daemon holds a job its policy says should wait, queued, and asks the policy
  // again every re-evaluation — so the same hours of each capacity, the same cost, the same finish.
  const std::string dt = letters(daemon.ticks), st = letters(sim.ticks);
  if (first_wait) *first_wait = st.find('.');
  EXPECT_EQ(dt, st);
  EXPECT_NEAR(daemon.spot_hours, sim.spot_hours, 1e-9);
  EXPECT_NEAR(daemon.on_demand_hours, sim.on_demand_hours, 1e-9);
  EXPECT_NEAR(daemon.cost_usd, sim.cost_usd, 1e-6);
  EXPECT_NEAR(daemon.finish_hours, sim.finish_hours, 1e-9);
}

constexpr const char* kTrace = "availability/1-node/aws-10-26-2022/us-west-2b_v100_1.json";

// Tight deadline from the trace's first spot stretch (the policy waits for spot only in the last
// outage), and a looser one from an outage (it waits in several, stopping on demand to wait).
TEST_F(SpotReplay, UniformProgressDecidesAsInTheSimulator) {
  size_t wait = 0;
  replay_and_compare({kTrace, 3, 84.0 / 72.0, 180, "up"}, &wait);
  EXPECT_GT(wait, 40u) << "the first outages find the job behind its line: on demand in both";
  replay_and_compare({kTrace, 80, 100.0 / 72.0, 180, "up"}, &wait);
  EXPECT_LT(wait, 20u) << "this window is meant to wait for spot early";
}

// Adaptive from a long outage, tight: it never waits; and from the first spot stretch.
TEST_F(SpotReplay, AdaptiveDecidesAsInTheSimulator) {
  size_t wait = 0;
  replay_and_compare({kTrace, 80, 84.0 / 72.0, 180, "adaptive"}, &wait);
  EXPECT_EQ(wait, std::string::npos) << "this window is meant to be one the simulator runs without waiting";
  replay_and_compare({kTrace, 3, 84.0 / 72.0, 180, "adaptive"});
}

// "lifetime" (one zone in the daemon: its moves between zones are the simulator's) from an outage
// and from a spot stretch, tight and loose.
TEST_F(SpotReplay, LifetimeDecidesAsInTheSimulator) {
  replay_and_compare({kTrace, 80, 84.0 / 72.0, 180, "lifetime"});
  replay_and_compare({kTrace, 3, 100.0 / 72.0, 180, "lifetime"});
}

// Every V100 trace of the availability set, from two points of it, at a loose deadline (the
// policies wait for spot often) with each policy.
TEST_F(SpotReplay, EveryV100TraceDecidesAsInTheSimulator) {
  for (const char* trace : {"availability/1-node/aws-10-26-2022/us-west-2a_v100_1.json",
                            "availability/1-node/aws-10-26-2022/us-west-2a_v100_8.json",
                            "availability/1-node/aws-10-26-2022/us-west-2b_v100_8.json"})
    for (size_t start : {500u, 2000u})
      for (const char* policy : {"up", "adaptive", "lifetime"}) {
        SCOPED_TRACE(std::string(trace) + " from tick " + std::to_string(start) + ", " + policy);
        replay_and_compare({trace, start, 1.5, 180, policy});
      }
}

}  // namespace
}  // namespace jobctl::daemon::testing
