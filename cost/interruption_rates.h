// How often a spot instance is interrupted (lambda, per hour running on spot), per cloud, region and
// instance type: what spot_risk.h prices a spot offer's interruptions with.
//
// Two sources, the more specific answer first:
//  1. configured rates (set()): a (cloud, region, instance type) with any part left empty as a
//     wildcard; the entry naming most of the three wins, an instance type outranking a region
//     ("aws", "", "p3.2xlarge" beats "aws", "us-east-1", ""). A rate with all three empty is
//     the configured default, and still beats the traces.
//  2. the real spot traces (../shared/data/spot-traces, "Can't Be Late", NSDI 2024), summarised in
//     a built-in table of one row per trace: its cloud, zone, instance type, how many
//     interruptions (available -> unavailable transitions) it shows and how many hours spot was
//     available. A rate is pooled over the traces that match, at the first of these levels where
//     they show at least one interruption: (cloud, region, type), (cloud, type), (cloud, region),
//     (cloud), all traces:
//       lambda = sum(interruptions) / sum(available hours)
//     E.g. aws us-west-2 p3.2xlarge: 4 traces, 398 interruptions in 1,249.5 available hours =
//     0.319/h; aws us-east-1 p3.2xlarge 0.628/h; any other AWS offer in us-west-2 0.543/h; GCP (its
//     traces are CPU VMs) 0.0166/h; a cloud with no trace (azure) the pool of all 16: 0.519/h.
//     docs/cost-model.md lists every row; tests/scheduler recompute them from the trace files.
//
// Thread safety: const methods are safe from any thread; set() is not.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jobctl::cost {

// One real spot trace, summarised.
struct SpotTraceSummary {
  std::string_view cloud;          // "aws", "gcp"
  std::string_view zone;           // "us-west-2a", "us-central1-a"
  std::string_view region;         // "us-west-2", "us-central1"
  std::string_view instance_type;  // "p3.2xlarge"
  std::string_view file;           // under ../shared/data/spot-traces
  int interruptions = 0;
  double available_hours = 0;
};

// The built-in summaries, one per trace file.
std::span<const SpotTraceSummary> spot_trace_summaries();

class InterruptionRates {
 public:
  struct Rate {
    double per_hour = 0;
    std::string source;  // "configured aws//p3.2xlarge", "traces aws us-west-2 p3.2xlarge: 398 interruptions in 1249.5 h (4 traces)"
  };

  // Rates from the built-in trace summaries only.
  InterruptionRates() = default;

  // A configured rate; empty parts are wildcards (see above). A second set() of the same key
  // replaces the first.
  void set(std::string cloud, std::string region, std::string instance_type, double per_hour);

  Rate rate(std::string_view cloud, std::string_view region, std::string_view instance_type) const;

 private:
  struct Entry {
    std::string cloud, region, instance_type;
    double per_hour = 0;
  };
  std::vector<Entry> configured_;
};

}  // namespace jobctl::cost
