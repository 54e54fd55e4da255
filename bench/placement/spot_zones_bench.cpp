// The spot deadline policies against the omniscient optimum on every real trace
// (../shared/data/spot-traces), in one zone and across the zones of a region: each policy's mean
// saving as a fraction of the optimum's, its deadlines met and its worst run against all on-demand.
//
// Runs: every trace alone (one zone), and every set of traces of one instance type in the zones of
// one region (multi-zone; the optimum plans across the zones with the same move costs, the
// single-zone policies stay in the set's first zone). C0 = 72 h on the 600 s-tick traces; on the
// 30-32 s-tick ones 24 h (16 h on the 2-day GCP traces), which keeps the optimum's state space
// (ticks x progress grid x zones) within seconds. Deadlines R0 = f x C0 for each factor f; a start
// every `step` hours while start + 2 x C0 fits the trace. Changeover 0.3 h, a move adds a 9 GB
// checkpoint at 1 Gbit/s (72 s), spot $0.92/h, on-demand $3.06/h (the paper's p3.2xlarge).
//
// Usage: jobctl-bench-spot-zones [--traces DIR] [--deadlines 1.1,1.5,2] [--jobs N] [--per-trace]
//   (default DIR $JOBCTL_SOURCE_DIR/../shared/data/spot-traces; N: the machine's cores)
// Exits 1 when a policy that met its deadline cost less than the optimum (the bound is wrong).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/placement/spot_trace_files.h"
#include "scheduler/deadline_policy.h"
#include "scheduler/optimal_policy.h"
#include "scheduler/spot_simulator.h"
#include "scheduler/spot_trace.h"

using namespace jobctl::scheduler;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kPolicies{"on-demand", "greedy", "up", "adaptive", "lifetime", "optimal"};

struct ZoneSet {
  std::string name;                 // the trace, or "folder/region/instance (zones)"
  bool multi = false;
  std::vector<const SpotTrace*> zones;
  double compute_hours = 0;
};

struct Job {
  const ZoneSet* set = nullptr;
  double factor = 0;
  double start = 0;
};

struct Outcome {
  std::vector<SimulationResult> results;  // per policy
};

SimulationResult run(const ZoneSet& set, const std::string& policy, const SimulationConfig& c) {
  std::vector<SpotTrace> zones;
  for (const auto* z : set.zones) zones.push_back(*z);
  std::unique_ptr<DeadlinePolicy> p;
  if (policy == "optimal") {
    auto o = make_optimal_zones_policy(zones, c);
    if (!o) {
      std::fprintf(stderr, "%s optimal: %s\n", set.name.c_str(), o.error().message.c_str());
      std::exit(2);
    }
    p = std::move(*o);
  } else {
    p = make_deadline_policy(policy);
  }
  auto r = simulate_zones(zones, c, *p);
  if (!r) {
    std::fprintf(stderr, "%s simulate: %s\n", set.name.c_str(), r.error().message.c_str());
    std::exit(2);
  }
  return *r;
}

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

std::vector<double> parse_list(const char* text) {
  std::vector<double> v;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) v.push_back(std::stod(item));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path dir;
  std::vector<double> factors{1.1, 1.5, 2.0};
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  bool per_trace = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--traces") && i + 1 < argc) dir = argv[++i];
    else if (!std::strcmp(argv[i], "--deadlines") && i + 1 < argc) factors = parse_list(argv[++i]);
    else if (!std::strcmp(argv[i], "--jobs") && i + 1 < argc) jobs = static_cast<unsigned>(std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--per-trace")) per_trace = true;
    else {
      std::fprintf(stderr, "usage: %s [--traces DIR] [--deadlines 1.1,1.5,2] [--jobs N] [--per-trace]\n", argv[0]);
      return 2;
    }
  }
  if (dir.empty()) dir = jobctl::bench::default_spot_trace_dir();
  const auto found = jobctl::bench::spot_trace_files(dir);
  if (!found) return 1;
  const std::vector<fs::path>& files = *found;
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

  // One zone per trace; the zones of a region (the zone name less its letter) for one instance type.
  std::vector<ZoneSet> sets;
  std::map<std::string, ZoneSet> regions;
  for (const auto& [name, t] : traces) {
    const double compute = t.gap_seconds >= 300 ? 72.0 : t.hours() >= 120 ? 24.0 : 16.0;
    sets.push_back(ZoneSet{name, false, {&t}, compute});
    const fs::path p(name);
    const std::string file = p.stem().string();  // e.g. us-west-2a_v100_1
    const auto underscore = file.find('_');
    std::string zone = file.substr(0, underscore), instance = file.substr(underscore + 1);
    std::string region = zone.substr(0, zone.size() - 1);
    if (!region.empty() && region.back() == '-') region.pop_back();
    const std::string key = p.parent_path().string() + "/" + region + "/" + instance;
    auto& set = regions[key];
    set.name = key;
    set.multi = true;
    set.zones.push_back(&t);
    set.compute_hours = compute;
  }
  for (auto& [key, set] : regions)
    if (set.zones.size() > 1) {
      set.name += " (" + std::to_string(set.zones.size()) + " zones)";
      sets.push_back(set);
    }

  std::vector<Job> work;
  for (const auto& set : sets) {
    double hours = set.zones.front()->hours();
    for (const auto* z : set.zones) hours = std::min(hours, z->hours());
    const double step = set.compute_hours >= 72 ? 24.0 : set.compute_hours >= 24 ? 12.0 : 4.0;
    for (double f : factors)
      for (double start = 0; start + 2 * set.compute_hours <= hours + 1e-9; start += step)
        work.push_back(Job{&set, f, start});
  }
  std::vector<Outcome> outcomes(work.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < work.size(); i = next++) {
      const Job& j = work[i];
      SimulationConfig c;
      c.compute_hours = j.set->compute_hours;
      c.deadline_hours = j.set->compute_hours * j.factor;
      c.changeover_hours = 0.3;
      c.spot_usd_per_hour = 0.92;
      c.on_demand_usd_per_hour = 3.06;
      c.start_hours = j.start;
      c.move_hours = checkpoint_transfer_hours(9.0, 1.0);
      for (const auto& p : kPolicies) outcomes[i].results.push_back(run(*j.set, p, c));
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::min<unsigned>(jobs, static_cast<unsigned>(work.size())); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();

  int beaten = 0;
  const size_t opt = kPolicies.size() - 1;
  for (size_t i = 0; i < work.size(); ++i)
    for (size_t p = 0; p < opt; ++p) {
      const auto& r = outcomes[i].results[p];
      if (r.deadline_met && r.cost_usd < outcomes[i].results[opt].cost_usd - 1e-9) {
        ++beaten;
        std::fprintf(stderr, "%s f %.2f start %.0f h: %s beats the optimum: %.4f < %.4f\n", work[i].set->name.c_str(),
                     work[i].factor, work[i].start, kPolicies[p].c_str(), r.cost_usd, outcomes[i].results[opt].cost_usd);
      }
    }

  auto print_header = [&](const char* first) {
    std::printf("| %s | deadline | runs |", first);
    for (const auto& p : kPolicies) std::printf(" %s |", p.c_str());
    std::printf("\n|---|---|---|");
    for (size_t i = 0; i < kPolicies.size(); ++i) std::printf("---|");
    std::printf("\n");
  };
  // A cell: mean saving, its fraction of the optimum's, deadlines met, the worst run.
  auto print_row = [&](const std::string& label, double f, const std::vector<Sum>& sums, bool bold) {
    std::printf("| %s | %.2fx | %d |", label.c_str(), f, sums[0].runs);
    const double best = sums[opt].mean();
    for (size_t p = 0; p < kPolicies.size(); ++p) {
      const auto& s = sums[p];
      const char* b = bold ? "**" : "";
      if (p == opt || p == 0)
        std::printf(" %s%.1f%%%s (%d/%d, min %.1f%%) |", b, 100 * s.mean(), b, s.met, s.runs, 100 * s.min_savings);
      else
        std::printf(" %s%.1f%% = %.0f%%%s (%d/%d, min %.1f%%) |", b, 100 * s.mean(), best > 0 ? 100 * s.mean() / best : 0,
                    b, s.met, s.runs, 100 * s.min_savings);
    }
    std::printf("\n");
  };
  std::printf("Mean savings against all on-demand = the fraction of the optimum's mean saving (deadlines met / runs, "
              "worst run's saving)\n\n");
  print_header("runs");
  for (const char* kind : {"one zone", "multi-zone", "all"})
    for (double f : factors) {
      std::vector<Sum> sums(kPolicies.size());
      for (size_t i = 0; i < work.size(); ++i) {
        if (work[i].factor != f) continue;
        if (!std::strcmp(kind, "one zone") && work[i].set->multi) continue;
        if (!std::strcmp(kind, "multi-zone") && !work[i].set->multi) continue;
        for (size_t p = 0; p < kPolicies.size(); ++p) sums[p].add(outcomes[i].results[p]);
      }
      print_row(kind, f, sums, !std::strcmp(kind, "all"));
    }
  if (per_trace) {
    std::printf("\n");
    print_header("trace or zones");
    for (const auto& set : sets)
      for (double f : factors) {
        std::vector<Sum> sums(kPolicies.size());
        for (size_t i = 0; i < work.size(); ++i)
          if (work[i].set == &set && work[i].factor == f)
            for (size_t p = 0; p < kPolicies.size(); ++p) sums[p].add(outcomes[i].results[p]);
        print_row(set.name, f, sums, false);
      }
  }
  std::printf("\nRuns in which a policy meeting its deadline cost less than the optimum: %d of %zu\n", beaten,
              work.size() * opt);
  return beaten == 0 ? 0 : 1;
}
