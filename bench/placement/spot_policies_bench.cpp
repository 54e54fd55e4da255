// The deadline policies on the real spot traces (../shared/data/spot-traces): the paper's headline
// run, and a sweep over every trace, start times every 6 h, tight and loose deadlines, each policy
// beside the omniscient optimum (scheduler/optimal_policy.h) of the same run: the gap to the limit.
//
// Usage: jobctl-bench-spot-policies [TRACES_DIR]   (default $JOBCTL_SOURCE_DIR/../shared/data/spot-traces)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/placement/spot_trace_files.h"
#include "scheduler/deadline_policy.h"
#include "scheduler/optimal_policy.h"
#include "scheduler/spot_simulator.h"
#include "scheduler/spot_trace.h"

using namespace jobctl::scheduler;
namespace fs = std::filesystem;

namespace {

struct Sum {
  int runs = 0, met = 0;
  double savings = 0, min_savings = 1;
  void add(const SimulationResult& r) {
    ++runs;
    met += r.deadline_met;
    savings += r.savings;
    min_savings = std::min(min_savings, r.savings);
  }
  double mean() const { return runs ? savings / runs : 0; }
};

SimulationResult run(const SpotTrace& t, const std::string& policy, const SimulationConfig& c) {
  std::unique_ptr<DeadlinePolicy> p;
  if (policy == "optimal") {
    auto o = make_optimal_policy(t, c);
    if (!o) {
      std::fprintf(stderr, "optimal: %s\n", o.error().message.c_str());
      std::exit(1);
    }
    p = std::move(*o);
  } else {
    p = make_deadline_policy(policy);
  }
  auto r = simulate(t, c, *p);
  if (!r) {
    std::fprintf(stderr, "simulate: %s\n", r.error().message.c_str());
    std::exit(1);
  }
  return *r;
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path dir = argc > 1 ? fs::path(argv[1]) : jobctl::bench::default_spot_trace_dir();
  const auto found = jobctl::bench::spot_trace_files(dir);
  if (!found) return 1;
  const std::vector<fs::path>& files = *found;
  const std::vector<std::string> policies{"on-demand", "greedy", "up", "adaptive", "optimal"};
  int beaten = 0;  // runs where a policy that met the deadline cost less than the optimum: must stay 0

  std::map<std::string, SpotTrace> traces;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::ostringstream s;
    s << in.rdbuf();
    auto t = parse_spot_trace(s.str());
    if (!t) {
      std::fprintf(stderr, "%s: %s\n", f.c_str(), t.error().message.c_str());
      return 1;
    }
    traces[fs::relative(f, dir).string()] = std::move(*t);
  }

  std::printf("Headline: us-west-2b p3.2xlarge preemption trace, 72 h compute, changeover 0.3 h, spot $0.92, "
              "on-demand $3.06, start 0\n");
  std::printf("| deadline | policy | cost $ | on-demand $ | savings | met | spot h | on-demand h | preemptions |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  const auto& headline = traces.at("preemption/1-node/aws-04-22-2023/us-west-2b_v100_1.json");
  for (double deadline : {84.0, 100.0}) {
    SimulationConfig c{72, deadline, 0.3, 0.92, 3.06};
    for (const auto& p : policies) {
      const auto r = run(headline, p, c);
      std::printf("| %.0f h | %s | %.2f | %.2f | %.1f%% | %s | %.2f | %.2f | %lld |\n", deadline, p.c_str(), r.cost_usd,
                  r.on_demand_cost_usd, 100 * r.savings, r.deadline_met ? "yes" : "NO", r.spot_hours,
                  r.on_demand_hours, static_cast<long long>(r.preemptions));
    }
  }

  std::printf("\nSweep: every trace, a start every 6 h, C0 = 72 h (24 h on the 2-day GCP traces), tight R0 = C0*84/72, "
              "loose R0 = C0*100/72; mean savings (runs meeting the deadline / runs)\n");
  std::printf("| trace | deadline | runs |");
  for (const auto& p : policies) std::printf(" %s |", p.c_str());
  std::printf("\n|---|---|---|");
  for (size_t i = 0; i < policies.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (bool tight : {true, false}) {
    std::map<std::string, Sum> all;
    for (const auto& [name, t] : traces) {
      const double compute = t.hours() >= 120 ? 72.0 : 24.0;
      SimulationConfig c{compute, compute * (tight ? 84.0 : 100.0) / 72.0, 0.3, 0.92, 3.06};
      std::map<std::string, Sum> per;
      for (double start = 0; start + c.deadline_hours <= t.hours(); start += 6.0) {
        c.start_hours = start;
        std::map<std::string, SimulationResult> results;
        for (const auto& p : policies) {
          const auto r = run(t, p, c);
          per[p].add(r);
          all[p].add(r);
          results[p] = r;
        }
        for (const auto& [p, r] : results)
          if (r.deadline_met && r.cost_usd < results["optimal"].cost_usd - 1e-9) {
            ++beaten;
            std::fprintf(stderr, "%s at %.0f h beats optimal: %.4f < %.4f\n", p.c_str(), start, r.cost_usd,
                         results["optimal"].cost_usd);
          }
      }
      std::printf("| %s | %s | %d |", name.c_str(), tight ? "tight" : "loose", per[policies[0]].runs);
      for (const auto& p : policies) std::printf(" %.1f%% (%d/%d) |", 100 * per[p].mean(), per[p].met, per[p].runs);
      std::printf("\n");
    }
    std::printf("| **all traces** | %s | %d |", tight ? "tight" : "loose", all[policies[0]].runs);
    for (const auto& p : policies)
      std::printf(" **%.1f%%** (%d/%d, min %.1f%%) |", 100 * all[p].mean(), all[p].met, all[p].runs,
                  100 * all[p].min_savings);
    std::printf("\n");
  }
  std::printf("\nruns in which a policy meeting the deadline cost less than the optimum: %d\n", beaten);
  return beaten == 0 ? 0 : 1;
}
