// Replays the real spot traces of ../shared/data/spot-traces (skypilot-org/spot-traces, the traces
// of "Can't Be Late", NSDI 2024) through the simulator. Skips when the data folder is absent (fails
// under CI=true: tests/support/shared_data.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <gtest/gtest.h>

#include "cost/interruption_rates.h"
#include "scheduler/deadline_policy.h"
#include "scheduler/optimal_policy.h"
#include "scheduler/spot_simulator.h"
#include "scheduler/spot_trace.h"
#include "tests/support/shared_data.h"
#include "tests/support/spot_traces.h"

namespace jobctl::scheduler {
namespace {

namespace fs = std::filesystem;

fs::path traces_dir() { return jobctl::testing::spot_traces_dir(); }

// Every trace file, in name order.
std::vector<fs::path> trace_files() {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(traces_dir()))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

SpotTrace load(const fs::path& p) { return jobctl::testing::load_spot_trace(p); }

class TraceReplay : public ::testing::Test {
 protected:
  void SetUp() override { JOBCTL_NEED_SHARED_DATA("spot-traces/preemption"); }
};

SimulationResult run(const SpotTrace& t, std::string_view policy, SimulationConfig c) {
  auto p = make_deadline_policy(policy);
  EXPECT_NE(p, nullptr);
  auto r = simulate(t, c, *p);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? *r : SimulationResult{};
}

// The paper's ML workload: p3.2xlarge in us-west-2b, 72 h of compute, deadline 84 h (tight),
// changeover 0.3 h, spot $0.92/h, on-demand $3.06/h. The paper reports UP at -41%.
TEST_F(TraceReplay, UniformProgressOnThePapersTrace) {
  const auto trace = load(traces_dir() / "preemption/1-node/aws-04-22-2023/us-west-2b_v100_1.json");
  SimulationConfig c;
  c.compute_hours = 72;
  c.deadline_hours = 84;
  c.changeover_hours = 0.3;
  c.spot_usd_per_hour = 0.92;
  c.on_demand_usd_per_hour = 3.06;
  for (double deadline : {84.0, 100.0}) {
    c.deadline_hours = deadline;
    std::printf("deadline %.0f h:\n", deadline);
    for (const char* name : {"up", "greedy", "on-demand", "adaptive"}) {
      const auto r = run(trace, name, c);
      std::printf("  %-10s cost $%7.2f  on-demand $%7.2f  savings %5.1f%%  met %d  finish %.2f h  spot %.2f h  "
                  "od %.2f h  preemptions %lld\n",
                  name, r.cost_usd, r.on_demand_cost_usd, 100 * r.savings, r.deadline_met, r.finish_hours,
                  r.spot_hours, r.on_demand_hours, static_cast<long long>(r.preemptions));
      EXPECT_TRUE(r.deadline_met) << name << " at " << deadline;
      if (std::string_view(name) == "up" && deadline == 84) {
        EXPECT_GE(r.savings, 0.40);
      }
      if (std::string_view(name) == "on-demand") {
        EXPECT_NEAR(r.savings, 0.0, 1e-9);
      }
    }
  }
}

struct Sweep {
  int runs = 0;
  int met = 0;
  double savings = 0;
  double min_savings = 1;
};

// Every trace in the preemption and availability folders, tight (R0 = C0 * 84/72) and loose
// (R0 = C0 * 100/72) deadlines, a start every 6 hours; 72 h of compute where the trace is long
// enough, 24 h for the 2-day GCP traces. Every policy must meet every deadline.
TEST_F(TraceReplay, EveryPolicyMeetsEveryDeadlineOnEveryTrace) {
  const std::vector<fs::path> files = trace_files();
  ASSERT_GE(files.size(), 16u);
  const std::vector<std::string> policies{"on-demand", "greedy", "up", "adaptive"};
  for (bool tight : {true, false}) {
    std::map<std::string, Sweep> total;
    for (const auto& f : files) {
      const auto trace = load(f);
      const double compute = trace.hours() >= 120 ? 72.0 : 24.0;
      SimulationConfig c;
      c.compute_hours = compute;
      c.deadline_hours = compute * (tight ? 84.0 : 100.0) / 72.0;
      c.changeover_hours = 0.3;
      c.spot_usd_per_hour = 0.92;
      c.on_demand_usd_per_hour = 3.06;
      for (double start = 0; start + c.deadline_hours <= trace.hours(); start += 6.0) {
        c.start_hours = start;
        for (const auto& p : policies) {
          const auto r = run(trace, p, c);
          EXPECT_TRUE(r.deadline_met) << p << " " << f << " start " << start << " deadline " << c.deadline_hours;
          auto& s = total[p];
          ++s.runs;
          s.met += r.deadline_met;
          s.savings += r.savings;
          s.min_savings = std::min(s.min_savings, r.savings);
        }
      }
    }
    std::printf("%s deadlines:\n", tight ? "tight" : "loose");
    for (const auto& p : policies) {
      const auto& s = total[p];
      std::printf("  %-10s runs %4d  met %4d  mean savings %5.1f%%  min %6.1f%%\n", p.c_str(), s.runs, s.met,
                  100 * s.savings / s.runs, 100 * s.min_savings);
    }
  }
}

// The omniscient optimum is never beaten by a policy that meets the deadline: a start every 12 h
// of the 600 s availability traces, tight and loose, and the first start of the 30 s preemption
// traces, tight (bench/placement/jobctl-bench-spot-policies checks every start of every trace: a
// loose plan on a 32 s trace takes seconds).
TEST_F(TraceReplay, NoPolicyBeatsTheOptimum) {
  const std::vector<fs::path> files = trace_files();
  ASSERT_GE(files.size(), 16u);
  int runs = 0;
  for (bool tight : {true, false}) {
    for (const auto& f : files) {
      const auto trace = load(f);
      const double compute = trace.hours() >= 120 ? 72.0 : 24.0;
      SimulationConfig c;
      c.compute_hours = compute;
      c.deadline_hours = compute * (tight ? 84.0 : 100.0) / 72.0;
      c.changeover_hours = 0.3;
      c.spot_usd_per_hour = 0.92;
      c.on_demand_usd_per_hour = 3.06;
      const bool coarse = trace.gap_seconds >= 600;
      if (!coarse && !tight) continue;
      const double step = coarse ? 12.0 : 1e9;
      for (double start = 0; start + c.deadline_hours <= trace.hours(); start += step) {
        c.start_hours = start;
        auto optimal = make_optimal_policy(trace, c);
        ASSERT_TRUE(optimal) << optimal.error().message;
        auto best = simulate(trace, c, **optimal);
        ASSERT_TRUE(best);
        EXPECT_TRUE(best->deadline_met) << f << " start " << start;
        EXPECT_NEAR(best->cost_usd, (*optimal)->plan().cost_usd, 1e-6) << f << " start " << start;
        ++runs;
        for (auto name : deadline_policy_names()) {
          if (name == "local-first") continue;  // needs an owned-GPU trace
          const auto r = run(trace, name, c);
          if (r.deadline_met) {
            EXPECT_LE(best->cost_usd, r.cost_usd + 1e-6) << name << " " << f << " start " << start;
          }
        }
      }
    }
  }
  std::printf("optimal checked against every policy in %d runs\n", runs);
}

// The built-in table placement takes its default spot interruption rates from
// (cost/interruption_rates.h) is these traces: every file has its row, with the same counts.
TEST_F(TraceReplay, InterruptionRatesAreTheTraces) {
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(traces_dir()))
    if (entry.is_regular_file() && entry.path().extension() == ".json") ++files;
  const auto table = cost::spot_trace_summaries();
  EXPECT_EQ(table.size(), files);
  for (const auto& row : table) {
    const SpotTrace t = load(traces_dir() / std::string(row.file));
    const TraceStats st = trace_stats(t);
    EXPECT_EQ(st.interruptions, row.interruptions) << row.file;
    EXPECT_NEAR(st.availability * st.hours, row.available_hours, 1e-6) << row.file;
    EXPECT_TRUE(std::string(row.file).find(std::string(row.zone)) != std::string::npos) << row.file;
  }
  // The figures docs/cost-model.md quotes.
  cost::InterruptionRates rates;
  EXPECT_NEAR(rates.rate("aws", "us-west-2", "p3.2xlarge").per_hour, 0.3185, 5e-4);
  EXPECT_NEAR(rates.rate("aws", "us-east-1", "p3.2xlarge").per_hour, 0.6281, 5e-4);
  EXPECT_NEAR(rates.rate("aws", "us-west-2", "g5.xlarge").per_hour, 0.5429, 5e-4);
  EXPECT_NEAR(rates.rate("aws", "us-east-2", "g5.xlarge").per_hour, 0.5472, 5e-4);
  EXPECT_NEAR(rates.rate("aws", "us-west-2", "p3.16xlarge").per_hour, 1.0882, 5e-4);
  EXPECT_NEAR(rates.rate("gcp", "us-central1", "a2-highgpu-1g").per_hour, 0.0166, 5e-4);
  EXPECT_NEAR(rates.rate("gcp", "us-east1", "a2-highgpu-1g").per_hour, 0.0689, 5e-4);
  EXPECT_NEAR(rates.rate("azure", "eastus", "Standard_NC6s_v3").per_hour, 0.5185, 5e-4);
}

}  // namespace
}  // namespace jobctl::scheduler
