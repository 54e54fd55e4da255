#include "cost/interruption_rates.h"

#include <array>

#include "base/fixed_decimal.h"

namespace jobctl::cost {

namespace {

// One row per file of ../shared/data/spot-traces (skypilot-org/spot-traces@221da1a): the
// interruptions (1 -> 0 transitions of the 1-node availability) and the available hours (ticks
// with spot available x gap). AWS traces name their instance by GPU: v100_1 is p3.2xlarge, v100_8
// p3.16xlarge, k80_1 p2.xlarge, k80_8 p2.8xlarge; the GCP ones are c3-highcpu-88 (a CPU VM).
// tests/scheduler/trace_replay_test.cpp (InterruptionRatesAreTheTraces) recomputes every row from the
// files.
constexpr std::array kTraces{
    SpotTraceSummary{"aws", "us-west-2a", "us-west-2", "p2.xlarge", "availability/1-node/aws-10-26-2022/us-west-2a_k80_1.json", 132, 579.5},
    SpotTraceSummary{"aws", "us-west-2a", "us-west-2", "p2.8xlarge", "availability/1-node/aws-10-26-2022/us-west-2a_k80_8.json", 135, 211.8333333333},
    SpotTraceSummary{"aws", "us-west-2a", "us-west-2", "p3.2xlarge", "availability/1-node/aws-10-26-2022/us-west-2a_v100_1.json", 126, 514.5},
    SpotTraceSummary{"aws", "us-west-2a", "us-west-2", "p3.16xlarge", "availability/1-node/aws-10-26-2022/us-west-2a_v100_8.json", 269, 311.5},
    SpotTraceSummary{"aws", "us-west-2b", "us-west-2", "p2.xlarge", "availability/1-node/aws-10-26-2022/us-west-2b_k80_1.json", 47, 75.6666666667},
    SpotTraceSummary{"aws", "us-west-2b", "us-west-2", "p2.8xlarge", "availability/1-node/aws-10-26-2022/us-west-2b_k80_8.json", 246, 264.8333333333},
    SpotTraceSummary{"aws", "us-west-2b", "us-west-2", "p3.2xlarge", "availability/1-node/aws-10-26-2022/us-west-2b_v100_1.json", 171, 464.6666666667},
    SpotTraceSummary{"aws", "us-west-2b", "us-west-2", "p3.16xlarge", "availability/1-node/aws-10-26-2022/us-west-2b_v100_8.json", 399, 302.3333333333},
    SpotTraceSummary{"aws", "us-east-1c", "us-east-1", "p3.2xlarge", "preemption/1-node/aws-04-22-2023/us-east-1c_v100_1.json", 41, 55.7688888889},
    SpotTraceSummary{"aws", "us-east-1f", "us-east-1", "p3.2xlarge", "preemption/1-node/aws-04-22-2023/us-east-1f_v100_1.json", 60, 105.04},
    SpotTraceSummary{"aws", "us-west-2b", "us-west-2", "p3.2xlarge", "preemption/1-node/aws-04-22-2023/us-west-2b_v100_1.json", 44, 140.6666666667},
    SpotTraceSummary{"aws", "us-west-2c", "us-west-2", "p3.2xlarge", "preemption/1-node/aws-04-22-2023/us-west-2c_v100_1.json", 57, 129.6977777778},
    SpotTraceSummary{"gcp", "us-central1-a", "us-central1", "c3-highcpu-88", "preemption/1-node/gcp-04-30-2023/us-central1-a_c3-88.json", 0, 45.625},
    SpotTraceSummary{"gcp", "us-central1-b", "us-central1", "c3-highcpu-88", "preemption/1-node/gcp-04-30-2023/us-central1-b_c3-88.json", 0, 45.625},
    SpotTraceSummary{"gcp", "us-central1-c", "us-central1", "c3-highcpu-88", "preemption/1-node/gcp-04-30-2023/us-central1-c_c3-88.json", 0, 45.625},
    SpotTraceSummary{"gcp", "us-east1-b", "us-east1", "c3-highcpu-88", "preemption/1-node/gcp-04-30-2023/us-east1-b_c3-88.json", 3, 43.55},
};

}  // namespace

std::span<const SpotTraceSummary> spot_trace_summaries() { return kTraces; }

void InterruptionRates::set(std::string cloud, std::string region, std::string instance_type, double per_hour) {
  for (auto& e : configured_)
    if (e.cloud == cloud && e.region == region && e.instance_type == instance_type) {
      e.per_hour = per_hour;
      return;
    }
  configured_.push_back(Entry{std::move(cloud), std::move(region), std::move(instance_type), per_hour});
}

InterruptionRates::Rate InterruptionRates::rate(std::string_view cloud, std::string_view region,
                                                std::string_view instance_type) const {
  // Specificity: the instance type counts more than the region, the region more than the cloud.
  auto score = [](bool c, bool r, bool t) { return (c ? 1 : 0) + (r ? 2 : 0) + (t ? 4 : 0); };
  const Entry* best = nullptr;
  int best_score = -1;
  for (const auto& e : configured_) {
    if ((!e.cloud.empty() && e.cloud != cloud) || (!e.region.empty() && e.region != region) ||
        (!e.instance_type.empty() && e.instance_type != instance_type))
      continue;
    const int s = score(!e.cloud.empty(), !e.region.empty(), !e.instance_type.empty());
    if (s > best_score) {
      best = &e;
      best_score = s;
    }
  }
  if (best)
    return Rate{best->per_hour, "configured " + best->cloud + "/" + best->region + "/" + best->instance_type};

  struct Level {
    bool cloud, region, type;
  };
  for (const Level l : {Level{true, true, true}, Level{true, false, true}, Level{true, true, false},
                        Level{true, false, false}, Level{false, false, false}}) {
    int n = 0, traces = 0;
    double hours = 0;
    for (const auto& t : kTraces) {
      if ((l.cloud && t.cloud != cloud) || (l.region && t.region != region) || (l.type && t.instance_type != instance_type))
        continue;
      n += t.interruptions;
      hours += t.available_hours;
      ++traces;
    }
    if (n == 0 || !(hours > 0)) continue;
    std::string what = "traces";
    if (l.cloud) what += " " + std::string(cloud);
    if (l.region) what += " " + std::string(region);
    if (l.type) what += " " + std::string(instance_type);
    if (!l.cloud) what += " (all)";
    return Rate{n / hours, what + ": " + std::to_string(n) + " interruptions in " + fixed_decimal(hours, 1) +
                               " available hours (" + std::to_string(traces) + " traces)"};
  }
  return Rate{0, "no trace"};  // unreachable with the built-in table
}

}  // namespace jobctl::cost
