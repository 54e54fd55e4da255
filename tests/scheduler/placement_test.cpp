#include "scheduler/placement.h"

#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "base/readable.h"
#include "cost/cpu_peak.h"
#include "cost/gpu_count_fit.h"
#include "cost/runtime_estimate.h"
#include "cost/spot_risk.h"
#include "cost/transformer_estimate.h"
#include "scheduler/feasibility.h"
#include "scheduler/job.h"
#include "scheduler/placement_json.h"
#include "scheduler/price_jump.h"
#include "train/spec/job_spec.h"
#include "train/spec/model_stats.h"

namespace jobctl::scheduler {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

cost::Offer offer(std::string cloud, std::string type, std::string gpu, int count, double mem, double od,
                  std::optional<double> spot) {
  cost::Offer o;
  o.cloud = std::move(cloud);
  o.instance_type = std::move(type);
  o.region = "us-east-1";
  o.gpu_model = std::move(gpu);
  o.gpu_count = count;
  o.gpu_memory_gb = mem;
  o.on_demand_usd_per_hour = od;
  o.spot_usd_per_hour = spot;
  return o;
}

std::vector<cost::Offer> offers() {
  return {offer("aws", "p3.2xlarge", "V100", 1, 16, 3.06, 0.92), offer("aws", "g4dn.xlarge", "T4", 1, 16, 0.526, 0.2),
          offer("lambda", "gpu_1x_a100", "A100", 1, 40, 1.29, std::nullopt),
          offer("aws", "p4d.24xlarge", "A100", 8, 40, 32.7726, 6.79)};
}

cost::LocalGpuInventory v100_inventory() {
  cost::LocalGpuInventory g;
  g.gpu_model = "V100";
  g.count = 2;
  g.purchase_usd = 2000;
  g.lifetime_years = 4;
  g.utilisation = 0.5;  // amortised: 2000 / (4 * 8760 * 0.5) = 0.11416 $/h
  return g;
}

// An MLP job of exactly 10 V100-hours at the default MLP efficiency (5% of 15.7 TFLOPS).
Job job(double v100_hours = 10) {
  Job j;
  j.id = "j1";
  j.workload.model_kind = "mlp";
  j.workload.training_flops = v100_hours * 15.7e12 * 0.05 * 3600;
  j.workload.vram_bytes_per_gpu = static_cast<int64_t>(2 * kGiB);
  j.workload.checkpoint_bytes = 100'000'000;
  return j;
}

Worker worker(std::string id, std::string model = "V100", double mem = 16) {
  Worker w;
  w.id = std::move(id);
  w.gpu_model = std::move(model);
  w.gpu_memory_gb = mem;
  return w;
}

struct Scenario {
  cost::EfficiencyCalibrator calibration;
  // One lambda for every offer, so that the figures below are easy to follow (the traces' rates
  // are tested in SpotRatesComeFromTheTracesUnlessConfigured).
  PlacementConfig config = [] {
    PlacementConfig c;
    c.spot_interruptions_per_hour = 0.1;
    return c;
  }();
  std::vector<cost::LocalGpuInventory> inventory{v100_inventory()};
  std::vector<cost::Offer> catalog = offers();
  LocalCapacity capacity{{worker("w1"), worker("w2")}};
  std::vector<Candidate> table;

  PlacementDecision decide(const Job& j, int64_t now = 0) {
    PlacementContext ctx(catalog, inventory, calibration, config);
    auto d = place(j, ctx, capacity, now, &table);
    reason = decision_reason(d, j, ctx, capacity);
    json = placement_json(d, table, j, ctx, capacity, PlacementDocumentInfo{"sim", now, 1.0});
    // The fast path (no table) makes the same decision.
    const auto fast = place(j, ctx, capacity, now);
    EXPECT_EQ(fast.outcome, d.outcome);
    EXPECT_EQ(fast.choice.kind, d.choice.kind);
    EXPECT_EQ(fast.choice.source, d.choice.source);
    EXPECT_DOUBLE_EQ(fast.choice.estimated_cost_usd, d.choice.estimated_cost_usd);
    return d;
  }
  std::string reason;
  nlohmann::json json;
};

TEST(Placement, CheapestWinsWithNoDeadline) {
  Scenario s;
  const auto d = s.decide(job());
  // 2 local + 4 offers x (on-demand, spot): the local V100 pool, 8 cloud rows.
  EXPECT_EQ(d.considered, 9u);
  EXPECT_EQ(d.outcome, Outcome::run_local);
  EXPECT_EQ(d.reason_code, ReasonCode::cheapest_no_deadline);
  EXPECT_NEAR(d.choice.usd_per_hour, 2000.0 / (4 * 8760 * 0.5), 1e-12);
  EXPECT_NEAR(d.choice.estimated_hours, 10.0, 1e-9);
  EXPECT_NEAR(d.choice.estimated_cost_usd, 10 * 2000.0 / (4 * 8760 * 0.5), 1e-9);
  EXPECT_NE(s.reason.find("cheapest option (no deadline): local V100 x1"), std::string::npos) << s.reason;
  ASSERT_EQ(s.table.size(), 9u);
  EXPECT_TRUE(s.table[0].chosen);
  EXPECT_EQ(d.chosen_row, 0);
}

TEST(Placement, CloudFiguresFollowTheCostModel) {
  Scenario s;
  s.capacity = LocalCapacity{};
  const Job j = job();
  const auto d = s.decide(j);
  PlacementContext ctx(s.catalog, s.inventory, s.calibration, s.config);
  const double c = ctx.checkpoint_hours(j.workload.checkpoint_bytes);
  const double r = ctx.restart_hours(j.workload.checkpoint_bytes);
  EXPECT_NEAR(c, (0.5 + 2.0) / 3600, 1e-12);         // 100 MB at 200 MB/s + 2 s
  EXPECT_NEAR(r, 0.05 + 0.01 + 1.0 / 3600, 1e-12);   // provision + warm-up + 100 MB at 100 MB/s
  const double factor = cost::spot_time_factor(c, r, 0.1);
  // Rows: [V100 od, V100 spot, T4 od, T4 spot, A100 od, A100 spot (none), 8xA100 od, spot].
  ASSERT_EQ(s.table.size(), 8u);
  const auto& v100_od = s.table[0];
  EXPECT_EQ(v100_od.kind, OptionKind::on_demand);
  EXPECT_NEAR(v100_od.estimated_hours, 10, 1e-9);
  EXPECT_NEAR(v100_od.estimated_cost_usd, 3.06 * (10 + 0.05), 1e-9);
  EXPECT_NEAR(v100_od.completion_hours, 10.05, 1e-9);
  const auto& v100_spot = s.table[1];
  EXPECT_NEAR(v100_spot.estimated_hours, 10 * factor, 1e-9);
  EXPECT_NEAR(v100_spot.estimated_cost_usd, 0.92 * (10 * factor + 0.05), 1e-9);
  const double t4_hours = 10 * 15.7 / 8.1;
  EXPECT_NEAR(s.table[3].estimated_cost_usd, 0.2 * (t4_hours * factor + 0.05), 1e-9);
  EXPECT_EQ(s.table[5].rejection, Rejection::no_spot_market);
  // T4 spot is the cheapest of all.
  EXPECT_EQ(d.outcome, Outcome::launch_spot);
  EXPECT_EQ(d.chosen_row, 3);
  EXPECT_TRUE(s.table[3].chosen);
}

TEST(Placement, SpotRatesComeFromTheTracesUnlessConfigured) {
  Scenario s;
  s.capacity = LocalCapacity{};
  s.config.spot_interruptions_per_hour.reset();
  const Job j = job();
  PlacementContext traces(s.catalog, s.inventory, s.calibration, s.config);
  // p3.2xlarge in us-east-1: the two us-east-1 V100 traces, 101 interruptions in 160.8 h.
  EXPECT_NEAR(traces.interruptions_per_hour(0), 101 / (55.7688888889 + 105.04), 1e-9);
  // g4dn.xlarge has no trace of its own: AWS us-east-1 (the same two traces).
  EXPECT_NEAR(traces.interruptions_per_hour(1), 101 / (55.7688888889 + 105.04), 1e-9);
  // Lambda has no trace: all of them.
  EXPECT_NEAR(traces.interruptions_per_hour(2), 0.5185, 1e-3);
  s.config.interruption_rates.set("aws", "", "p3.2xlarge", 0.25);
  s.config.interruption_rates.set("aws", "us-east-1", "", 2.0);
  PlacementContext configured(s.catalog, s.inventory, s.calibration, s.config);
  EXPECT_DOUBLE_EQ(configured.interruptions_per_hour(0), 0.25);  // the instance type outranks the region
  EXPECT_DOUBLE_EQ(configured.interruptions_per_hour(1), 2.0);
  // A higher lambda makes spot dearer in expected time and money.
  s.decide(j);
  const double spot_hours_traces = s.table[1].estimated_hours;
  s.config.interruption_rates = {};
  s.config.spot_interruptions_per_hour = 0.01;
  s.decide(j);
  EXPECT_GT(spot_hours_traces, s.table[1].estimated_hours);
}

TEST(Placement, DeadlinePicksTheCheapestThatMeetsIt) {
  Scenario s;
  s.capacity = LocalCapacity{};
  Job j = job();
  j.deadline_hours = 12;  // T4 needs 19.4 h; V100 10.2 h; A100 8.1 h
  const auto d = s.decide(j);
  EXPECT_EQ(d.reason_code, ReasonCode::cheapest_meeting_deadline);
  EXPECT_EQ(d.outcome, Outcome::launch_spot);
  EXPECT_EQ(s.table[d.chosen_row].source, 0u);  // V100 spot: $9.5, beats A100 on-demand ($10.5)
  EXPECT_TRUE(d.choice.meets_deadline);
  EXPECT_FALSE(s.table[3].meets_deadline);        // T4 spot is cheaper but too slow
  EXPECT_NE(s.reason.find("meeting the deadline (12.00 h left)"), std::string::npos) << s.reason;
  // Time already spent in the queue counts against the deadline: 3 h later only the A100s make it.
  const auto later = s.decide(j, 3 * 3'600'000);
  ASSERT_TRUE(later.deadline_left_hours);
  EXPECT_DOUBLE_EQ(*later.deadline_left_hours, 9.0);
  EXPECT_EQ(later.outcome, Outcome::launch_on_demand);
  EXPECT_EQ(s.catalog[later.choice.source].instance_type, "gpu_1x_a100");
  // The same through an injected clock.
  ManualClock clock(3 * 3'600'000);
  PlacementContext ctx(s.catalog, s.inventory, s.calibration, s.config);
  const auto via_clock = place(j, ctx, s.capacity, clock);
  EXPECT_EQ(via_clock.choice.source, later.choice.source);
  EXPECT_DOUBLE_EQ(*via_clock.deadline_left_hours, 9.0);
}

TEST(Placement, NoneMeetsTheDeadlineEarliestWithinCap) {
  Scenario s;
  s.capacity = LocalCapacity{};
  Job j = job();
  j.deadline_hours = 5;         // nothing single-GPU is that fast
  j.max_usd_per_hour = 5.0;     // and the 8xA100 is over the cap
  const auto d = s.decide(j);
  EXPECT_EQ(d.reason_code, ReasonCode::earliest_missing_deadline);
  EXPECT_EQ(d.meeting_deadline, 0u);
  EXPECT_EQ(s.catalog[d.choice.source].instance_type, "gpu_1x_a100");
  EXPECT_EQ(d.choice.kind, OptionKind::on_demand);
  EXPECT_EQ(s.table[6].rejection, Rejection::price_cap);
  EXPECT_NE(s.reason.find("no option meets the deadline"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("earliest finishing within the price cap"), std::string::npos);
}

TEST(Placement, MultiGpuJobAndPriceCap) {
  Scenario s;
  Job j = job(80);
  j.workload.gpus = 8;
  j.deadline_hours = 12;
  const auto d = s.decide(j);
  // Only p4d has 8 GPUs: 80 V100-h = 80*15.7/19.5/8 = 8.05 h on 8 A100s.
  EXPECT_EQ(s.catalog[d.choice.source].instance_type, "p4d.24xlarge");
  EXPECT_EQ(d.rejected[static_cast<size_t>(Rejection::too_few_gpus)], 7u);  // local + 3 offers x 2
  EXPECT_NEAR(d.choice.estimated_hours, 80 * 15.7 / 19.5 / 8 * (d.choice.kind == OptionKind::spot
                                                                   ? cost::spot_time_factor(
                                                                         (0.5 + 2) / 3600, 0.06 + 1.0 / 3600, 0.1)
                                                                   : 1.0),
              1e-9);
  j.max_usd_per_hour = 5;
  const auto capped = s.decide(j);
  EXPECT_EQ(capped.outcome, Outcome::unplaceable);
  EXPECT_EQ(capped.reason_code, ReasonCode::nothing_fits);
  EXPECT_NE(s.reason.find("7 too_few_gpus"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("2 price_cap (cap $5.00/h)"), std::string::npos) << s.reason;
}

// A gang (resources.nodes) runs on an owned pool with as many workers as nodes, each node's GPUs
// priced; wider than the pool, it goes to the cloud (one instance per node).
TEST(Placement, AGangRunsOnAnOwnedPoolOfEnoughMachinesAtEveryNodesPrice) {
  Scenario s;  // a pool of two V100 workers
  Job j = job(10);
  j.nodes = 2;
  const auto d = s.decide(j);
  ASSERT_EQ(d.choice.kind, OptionKind::local);
  EXPECT_NEAR(d.choice.usd_per_hour, 2 * 2000.0 / (4 * 8760 * 0.5), 1e-12);
  EXPECT_NEAR(d.choice.estimated_hours, 5.0, 1e-9) << "two nodes' GPUs share the work";
  EXPECT_EQ(d.rejected[static_cast<size_t>(Rejection::too_few_machines)], 0u) << "2 instances of an offer fit the cap";
  j.nodes = 3;
  const auto wide = s.decide(j);
  EXPECT_TRUE(is_cloud(wide.choice.kind)) << s.reason;
  EXPECT_EQ(s.table[0].rejection, Rejection::too_few_machines);
  EXPECT_NE(s.json.dump().find("needs 3 machines at once; this pool has 2 workers"), std::string::npos) << s.json.dump();
}

// A gang on a Slurm partition: its nodes are tasks of one Slurm job, one per Slurm node, or
// tasks_per_node of them sharing one node's GPUs; priced and timed for every node.
TEST(Placement, AGangRunsOnASlurmPartitionOfEnoughNodesAsTasks) {
  Scenario s;
  s.capacity = LocalCapacity{};
  s.config.slurm_launchable = true;
  s.capacity.add_partition({"gpu", "V100", 4, 16, {0.5, 0.5, 3.0, 3.0}, 1, 3});  // 3 usable nodes
  s.capacity.add_partition({"one", "V100", 2, 16, {0.1, 0.2}, 2, 2});             // 1 node, 2 tasks on it
  const double per_gpu = 2000.0 / (4 * 8760 * 0.5);
  Job j = job(10);
  j.workload.gpus = 2;
  j.nodes = 2;
  auto d = s.decide(j);
  ASSERT_GE(s.table.size(), 2u);
  EXPECT_EQ(s.table[0].rejection, Rejection::none);
  EXPECT_NEAR(s.table[0].usd_per_hour, 2 * 2 * per_gpu, 1e-12) << "two GPUs on each of two nodes";
  EXPECT_NEAR(s.table[0].estimated_hours, 2.5, 1e-9) << "10 V100-hours on four";
  EXPECT_DOUBLE_EQ(s.table[0].queue_wait_hours, 0.5);
  // Two tasks of two GPUs on a 2-GPU node: no.
  EXPECT_EQ(s.table[1].rejection, Rejection::too_few_gpus);
  EXPECT_EQ(d.choice.kind, OptionKind::slurm);

  // One GPU a node: the one-node partition runs both tasks on its two GPUs (Slurm's wait for 2).
  j.workload.gpus = 1;
  d = s.decide(j);
  EXPECT_EQ(s.table[1].rejection, Rejection::none);
  EXPECT_DOUBLE_EQ(s.table[1].queue_wait_hours, 0.2);
  EXPECT_NEAR(s.table[1].usd_per_hour, 2 * per_gpu, 1e-12);

  // Four nodes: more than either partition runs at once (cloud instances may take it).
  j.nodes = 4;
  d = s.decide(j);
  EXPECT_NE(d.choice.kind, OptionKind::slurm);
  EXPECT_EQ(s.table[0].rejection, Rejection::too_few_machines);
  EXPECT_EQ(s.table[1].rejection, Rejection::too_few_machines);
  EXPECT_NE(s.json.dump().find("needs 4 machines at once; this partition runs 3 (3 usable nodes x 1 task)"),
            std::string::npos)
      << s.json.dump();
}

// A gang of N nodes on a cloud offer is N instances of it: N times the price per hour, the work
// spread over every instance's GPUs, and on spot the risk that any one of the N is interrupted
// (N lambda: one interruption stops the whole gang).
TEST(Placement, ACloudGangIsNInstancesOfTheOfferAtNTimesThePriceAndNTimesTheSpotRisk) {
  Scenario s;
  Job one = job(10);
  one.mode = train::PlacementMode::cloud;
  s.decide(one);
  const std::vector<Candidate> single = s.table;
  Job gang = one;
  gang.nodes = 2;
  s.decide(gang);
  ASSERT_EQ(s.table.size(), single.size());
  const double c = (100'000'000 / 200e6 + 2.0) / 3600;  // checkpoint write: bytes, then the fixed part
  const double r = 0.05 + 0.01 + 100'000'000 / 100e6 / 3600;  // provision, warm-up, fetch
  int cloud_rows = 0;
  for (size_t i = 0; i < s.table.size(); ++i) {
    const Candidate& g = s.table[i];
    const Candidate& o = single[i];
    if (!is_cloud(g.kind) || g.rejection != Rejection::none) continue;
    ++cloud_rows;
    const std::string row = option_label(g, PlacementContext(s.catalog, s.inventory, s.calibration, s.config), s.capacity);
    EXPECT_NEAR(g.usd_per_hour, 2 * o.usd_per_hour, 1e-9) << row;
    EXPECT_EQ(g.gpus, o.gpus) << row << ": GPUs per node";
    if (g.kind == OptionKind::on_demand) {
      EXPECT_NEAR(g.estimated_hours, o.estimated_hours / 2, 1e-9) << row;
      EXPECT_NEAR(g.estimated_cost_usd, g.usd_per_hour * (g.estimated_hours + 0.05), 1e-9) << row;
    } else {
      // The on-demand row just before is the same offer: its time is the gang's time without risk.
      const double t = s.table[i - 1].estimated_hours;
      EXPECT_NEAR(g.estimated_hours, t * cost::spot_time_factor(c, r, 2 * 0.1), 1e-9) << row;
      EXPECT_GT(g.estimated_hours, t * cost::spot_time_factor(c, r, 0.1)) << row << ": two instances, twice the risk";
    }
  }
  EXPECT_EQ(cloud_rows, 7) << "every cloud row but the spot one of an offer with no spot market";
  // The decision document shows the rate the gang was priced with: its two instances'.
  for (const auto& row : s.json["candidates"])
    if (row.value("option", "") == "spot" && row.contains("interruptions_per_hour"))
      EXPECT_NEAR(row["interruptions_per_hour"].get<double>(), 2 * 0.1, 1e-12) << row.dump();
}

// cloud.max_instances caps a cloud gang: wider, every cloud row is rejected, with the cap named.
TEST(Placement, ACloudGangWiderThanMaxInstancesIsRejected) {
  Scenario s;
  s.config.cloud_max_instances = 2;
  Job j = job(10);
  j.nodes = 3;
  const auto d = s.decide(j);
  EXPECT_EQ(d.outcome, Outcome::unplaceable);
  EXPECT_EQ(d.rejected[static_cast<size_t>(Rejection::too_few_machines)], 9u);  // the pool + 4 offers x 2
  EXPECT_NE(s.json.dump().find("needs 3 instances at once; at most 2 run at once (cloud.max_instances)"),
            std::string::npos)
      << s.json.dump();
  j.nodes = 2;
  EXPECT_NE(s.decide(j).outcome, Outcome::unplaceable);
  EXPECT_EQ(s.table[2].rejection, Rejection::none) << "2 instances of p3.2xlarge fit the cap";
}

TEST(Placement, MemoryMisfitIsNeverPlaced) {
  Scenario s;
  Job j = job();
  j.workload.vram_bytes_per_gpu = static_cast<int64_t>(20 * kGiB);  // > 16 GiB of V100/T4
  const auto d = s.decide(j);
  EXPECT_EQ(d.rejected[static_cast<size_t>(Rejection::memory)], 5u);  // local V100, 2 x V100, 2 x T4
  EXPECT_EQ(s.catalog[d.choice.source].gpu_model, "A100");
  for (const auto& c : s.table) {
    if (c.rejection != Rejection::none) continue;
    ASSERT_NE(c.kind, OptionKind::local);
    EXPECT_GE(s.catalog[c.source].gpu_memory_gb, 20);
  }
  const auto& rows = s.json["candidates"];
  ASSERT_EQ(rows.size(), 9u);
  EXPECT_EQ(rows[0]["rejection"], "memory");
  EXPECT_EQ(rows[0]["rejected"], "needs 20.00 GiB per GPU; has 16.0");
  j.workload.vram_bytes_per_gpu = static_cast<int64_t>(100 * kGiB);
  const auto none = s.decide(j);
  EXPECT_EQ(none.outcome, Outcome::unplaceable);
  EXPECT_NE(s.reason.find("memory (needs 100.00 GiB per GPU)"), std::string::npos) << s.reason;
}

TEST(Placement, ModesAndConstraints) {
  Scenario s;
  Job j = job();
  j.mode = train::PlacementMode::cloud;
  EXPECT_NE(s.decide(j).choice.kind, OptionKind::local);
  EXPECT_EQ(s.table[0].rejection, Rejection::placement_mode);
  j.mode = train::PlacementMode::local;
  j.deadline_hours = 1;  // misses, but local is all it may use
  auto d = s.decide(j);
  EXPECT_EQ(d.choice.kind, OptionKind::local);
  EXPECT_EQ(d.reason_code, ReasonCode::earliest_missing_deadline);

  j = job();
  s.capacity = LocalCapacity{};
  j.spot = train::SpotMode::never;
  d = s.decide(j);
  EXPECT_EQ(d.choice.kind, OptionKind::on_demand);
  EXPECT_EQ(s.catalog[d.choice.source].instance_type, "g4dn.xlarge");
  j.spot = train::SpotMode::always;
  d = s.decide(j);
  EXPECT_EQ(d.choice.kind, OptionKind::spot);
  EXPECT_EQ(s.table[0].rejection, Rejection::spot_mode);

  j = job();
  j.gpu = "A100";
  d = s.decide(j);
  EXPECT_EQ(s.catalog[d.choice.source].instance_type, "gpu_1x_a100");
  EXPECT_EQ(s.json["candidates"][0]["rejected"], "the job asks for A100, this is V100");
  j.gpu = "H200";  // nobody has one
  EXPECT_EQ(s.decide(j).outcome, Outcome::unplaceable);
}

// One CPU worker, priced at its power ($0.02/h), as the only local machine.
void only_a_cpu_worker(Scenario& s) {
  s.capacity = LocalCapacity{{worker("cpu1", "cpu", 64)}};
  s.inventory.push_back(cost::LocalGpuInventory{.gpu_model = "cpu", .purchase_usd = 0, .power_kw = 0.2,
                                                .electricity_usd_per_kwh = 0.1});
}

TEST(Placement, CpuJobsAndCpuWorkers) {
  Scenario s;
  only_a_cpu_worker(s);
  Job j = job(0.01);
  j.gpu = "cpu";
  auto d = s.decide(j);
  EXPECT_EQ(d.choice.kind, OptionKind::local);
  EXPECT_EQ(s.capacity.pools()[d.choice.source].gpu_model, "cpu");
  EXPECT_NEAR(d.choice.usd_per_hour, 0.02, 1e-12);
  j.gpu = "any";  // any device: the CPU worker fits, but a GPU is taken when one fits
  d = s.decide(j);
  EXPECT_EQ(s.table[0].rejection, Rejection::none);
  EXPECT_NE(d.choice.kind, OptionKind::local);
  s.config.cloud_launchable = false;  // no GPU can be had: the CPU worker takes it
  d = s.decide(j);
  EXPECT_EQ(d.choice.kind, OptionKind::local);
  EXPECT_EQ(s.capacity.pools()[d.choice.source].gpu_model, "cpu");
}

// "gpu: any" takes a GPU whenever one fits, even when a CPU option costs less: the reason says so
// with both figures, and does not call the GPU "the cheapest option".
TEST(Placement, AGpuPreferredOverACheaperCpuSaysSoWithBothFigures) {
  Scenario s;
  only_a_cpu_worker(s);
  Job j = job(0.01);
  j.gpu = "any";
  const auto d = s.decide(j);
  ASSERT_NE(d.choice.kind, OptionKind::local);
  ASSERT_TRUE(d.cheaper_cpu);
  EXPECT_EQ(s.capacity.pools()[d.cheaper_cpu->source].gpu_model, "cpu");
  ASSERT_LT(d.cheaper_cpu->estimated_cost_usd, d.choice.estimated_cost_usd);
  PlacementContext ctx(s.catalog, s.inventory, s.calibration, s.config);
  const std::string want = "GPU preferred: " + option_label(d.choice, ctx, s.capacity) + " " +
                           readable::usd(d.choice.estimated_cost_usd) + " over local CPU " +
                           readable::usd(d.cheaper_cpu->estimated_cost_usd) +
                           " (gpu: any prefers a GPU when one fits); cheapest GPU option (no deadline): ";
  EXPECT_EQ(s.reason.substr(0, want.size()), want) << s.reason;
  EXPECT_EQ(s.reason.find("cheapest option"), std::string::npos) << s.reason;

  // A CPU job, or "any" with no GPU to be had: no such rule applied, no such words.
  j.gpu = "cpu";
  EXPECT_FALSE(s.decide(j).cheaper_cpu);
  EXPECT_EQ(s.reason.find("GPU preferred"), std::string::npos) << s.reason;
  j.gpu = "any";
  s.config.cloud_launchable = false;
  EXPECT_FALSE(s.decide(j).cheaper_cpu);
  EXPECT_EQ(s.reason.rfind("cheapest option (no deadline): local CPU", 0), 0u) << s.reason;
}

// A 1-GPU job on an 8-GPU machine: its label and its row say the GPU it takes, and the machine's
// eight apart ("local H100-SXM x8" read as if the job took the box). An offer with no spot market
// has no spot price (null), never "$0/h".
TEST(Placement, LabelsSayTheGpusTheJobTakes) {
  Scenario s;
  Worker box = worker("box", "H100-SXM", 80);
  box.gpu_count = 8;
  s.capacity = LocalCapacity{{box}};
  s.inventory = {cost::LocalGpuInventory{.gpu_model = "H100-SXM", .count = 8, .purchase_usd = 30000}};
  const auto d = s.decide(job(1));
  ASSERT_EQ(d.choice.kind, OptionKind::local);
  EXPECT_EQ(s.json["chosen"]["label"], "local H100-SXM x1 (8-GPU machine)");
  EXPECT_EQ(s.json["chosen"]["gpus"], 1);
  EXPECT_EQ(s.json["chosen"]["job_gpus"], 1);
  EXPECT_EQ(s.json["chosen"]["machine_gpus"], 8);
  EXPECT_NE(s.reason.find("local H100-SXM x1 (8-GPU machine) at "), std::string::npos) << s.reason;
  bool saw_no_spot = false;
  for (const auto& c : s.json["candidates"]) {
    if (c.value("rejection", "") != "no_spot_market") continue;
    saw_no_spot = true;
    EXPECT_TRUE(c["usd_per_hour"].is_null()) << c.dump();
  }
  EXPECT_TRUE(saw_no_spot) << "lambda gpu_1x_a100 has no spot price";
  s.config.cloud_launchable = false;  // rejected for that first: still no spot price
  s.decide(job(1));
  int unpriced = 0;
  for (const auto& c : s.json["candidates"])
    if (c["option"] == "spot" && c["usd_per_hour"].is_null()) ++unpriced;
  EXPECT_EQ(unpriced, 1) << s.json["candidates"].dump();
  Job wide = job(1);
  wide.workload.gpus = 8;
  s.decide(wide);
  EXPECT_EQ(s.json["chosen"]["label"], "local H100-SXM x8") << "the job takes the whole machine";
  EXPECT_EQ(s.json["chosen"]["gpus"], 8);
}

// A job does not wait for a busy pool while a worker that fits it is idle — unless it has a
// deadline, waiting is cheaper, and the busy pool frees in time; the reason says which. (A
// "gpu: any" job sat placed on a busy or absent GPU while a CPU worker idled.)
TEST(Placement, AnIdleWorkerIsNotLeftIdleWhileTheJobWaits) {
  Scenario s;
  s.config.cloud_launchable = false;
  Worker v100 = worker("v100");  // cheap (the V100 inventory), busy for 2 h
  v100.busy = true;
  v100.busy_until_ms = 2 * 3'600'000;
  Worker rtx = worker("rtx", "RTX4090", 24);  // idle, priced at its board power: dearer
  s.inventory.push_back(cost::LocalGpuInventory{.gpu_model = "RTX4090", .purchase_usd = 20000, .power_kw = 0.45,
                                                .electricity_usd_per_kwh = 0.15});
  s.capacity = LocalCapacity{{v100, rtx}};
  Job j = job(1);  // 1 V100-hour
  auto d = s.decide(j);  // no deadline: the idle RTX 4090 takes it
  EXPECT_EQ(d.outcome, Outcome::run_local);
  EXPECT_EQ(s.capacity.pools()[d.choice.source].gpu_model, "RTX4090");
  ASSERT_TRUE(d.idle_alternative);
  EXPECT_FALSE(d.waits_over_idle);
  EXPECT_NE(s.reason.find("local RTX4090 x1 is idle: taken rather than waiting 2.00 h for local V100 x1"),
            std::string::npos) << s.reason;
  j.deadline_hours = 24;  // the V100 frees in 2 h and finishes in 3 h: cheaper and in time, so it waits
  d = s.decide(j);
  EXPECT_EQ(d.outcome, Outcome::wait_local);
  EXPECT_TRUE(d.waits_over_idle);
  EXPECT_NE(s.reason.find("rather than the idle local RTX4090 x1"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("within the deadline"), std::string::npos) << s.reason;
  j.deadline_hours = 2.5;  // the wait would miss it: the idle one
  d = s.decide(j);
  EXPECT_EQ(d.outcome, Outcome::run_local);
  // "any" waiting for a busy GPU while a CPU worker idles: the CPU takes it.
  s.capacity = LocalCapacity{{v100, worker("cpu1", "cpu", 64)}};
  Job any = job(0.001);
  any.gpu = "any";
  d = s.decide(any);
  EXPECT_EQ(d.outcome, Outcome::run_local);
  EXPECT_EQ(s.capacity.pools()[d.choice.source].gpu_model, "cpu");
  EXPECT_FALSE(d.cheaper_cpu) << "the CPU was taken: no GPU was preferred";
  EXPECT_EQ(s.reason.find("GPU preferred"), std::string::npos) << s.reason;
}

// A CPU machine is timed at its own peak (cores x SIMD width, cost/cpu_peak.h) and calibrated
// under its own key, not at the generic "cpu" row's 0.5 TFLOP/s.
// The 2-core AMD EPYC VM as the only machine (0.166 TFLOP/s, cost/cpu_peak.h), and a CPU job.
const std::string kEpycVm = cost::cpu_device_key("AMD EPYC", 2);

void only_the_epyc_vm(Scenario& s) {
  s.config.cloud_launchable = false;
  s.config.cpu_peak_tflops[kEpycVm] = 0.166;
  s.capacity = LocalCapacity{{worker("cpu1", kEpycVm, 8)}};
}

Job cpu_job() {
  Job j = job(0.01);
  j.gpu = "cpu";
  return j;
}

TEST(Placement, ACpuMachineIsTimedByItsOwnPeak) {
  Scenario s;
  only_the_epyc_vm(s);
  const std::string& vm = kEpycVm;
  Job j = cpu_job();
  auto d = s.decide(j);
  ASSERT_EQ(d.choice.kind, OptionKind::local);
  const double flops = j.workload.training_flops;
  EXPECT_NEAR(d.choice.estimated_hours, flops / (0.166e12 * cost::default_efficiency("cpu", "mlp") * 3600), 1e-9);
  // Calibrated under its key: a measured efficiency moves this machine's estimate alone.
  ASSERT_TRUE(s.calibration.observe_at_peak(vm, "mlp", 0.166e12 * 0.6, 1.0, 0.166e12));
  d = s.decide(j);
  EXPECT_NEAR(d.choice.estimated_hours, flops / (0.166e12 * 0.6 * 3600), 1e-9);
  // Priced by the "cpu" inventory entry like any CPU.
  s.inventory.push_back(cost::LocalGpuInventory{.gpu_model = "cpu", .purchase_usd = 0, .power_kw = 0.1,
                                                .electricity_usd_per_kwh = 0.2});
  d = s.decide(j);
  EXPECT_NEAR(d.choice.usd_per_hour, 0.02, 1e-12);
}

// What a run spends outside its steps (start-up, evaluation), once calibration has learned it for
// a device, is part of every estimate on that device and no other: without it a short job's
// estimate is its compute alone, and identical jobs are estimated well below what they take.
TEST(Placement, TheCalibratedRunOverheadIsPartOfTheEstimate) {
  Scenario s;
  only_the_epyc_vm(s);
  Job j = cpu_job();
  const double compute = s.decide(j).choice.estimated_hours;
  ASSERT_TRUE(s.calibration.observe_overhead(kEpycVm, "mlp", 36));
  auto d = s.decide(j);
  EXPECT_NEAR(d.choice.estimated_hours, compute + 0.01, 1e-9);
  EXPECT_NEAR(d.choice.estimated_cost_usd, d.choice.usd_per_hour * (compute + 0.01), 1e-12);
  // Another model kind on the same machine has learned nothing yet.
  j.workload.model_kind = "cnn";
  EXPECT_NEAR(s.decide(j).choice.estimated_hours,
              j.workload.training_flops / (0.166e12 * cost::default_efficiency("cpu", "cnn") * 3600), 1e-9);
}

// A 1-GPU job on a 4 x V100 worker pays for one GPU, not four (it was priced, and billed, for all
// four); while one GPU is free the worker runs it at once; a 2-GPU job waits for two.
TEST(Placement, AJobPaysForTheGpusItTakes) {
  Scenario s;
  Worker box = worker("box");
  box.gpu_count = 4;
  box.held_until = {2 * 3'600'000, 2 * 3'600'000, 2 * 3'600'000};  // three GPUs busy for 2 h
  s.capacity = LocalCapacity{{box}};
  const double per_gpu = 2000.0 / (4 * 8760 * 0.5);
  Job j = job();
  auto d = s.decide(j);
  ASSERT_EQ(d.choice.kind, OptionKind::local);
  EXPECT_EQ(d.outcome, Outcome::run_local);
  EXPECT_NEAR(d.choice.usd_per_hour, per_gpu, 1e-12);
  EXPECT_NEAR(d.choice.estimated_cost_usd, per_gpu * 10, 1e-9);
  j.workload.gpus = 2;
  d = s.decide(j);
  EXPECT_NEAR(s.table[0].usd_per_hour, 2 * per_gpu, 1e-12);
  EXPECT_DOUBLE_EQ(s.table[0].queue_wait_hours, 2.0);
  if (d.choice.kind == OptionKind::local) {
    EXPECT_EQ(d.outcome, Outcome::wait_local);
  }
}

// A Slurm partition is owned GPUs behind Slurm's queue: priced per GPU like the local pool of its
// model, its completion time the queue wait Slurm gives for that many GPUs plus the run. Shown but
// rejected while nothing submits Slurm jobs; chosen when it is the cheapest option that launches.
TEST(Placement, ASlurmPartitionIsOwnedGpusBehindAQueue) {
  Scenario s;
  s.capacity = LocalCapacity{};
  s.capacity.add_partition({"gpu", "V100", 4, 16, {0.5, 0.5, 3.0, 3.0}});
  s.capacity.add_partition({"small", "V100", 1, 16, {0.0}});
  const double per_gpu = 2000.0 / (4 * 8760 * 0.5);
  Job j = job();
  j.workload.gpus = 2;
  auto d = s.decide(j);
  ASSERT_GE(s.table.size(), 2u);
  const Candidate& gpu = s.table[0];
  EXPECT_EQ(gpu.kind, OptionKind::slurm);
  EXPECT_EQ(gpu.rejection, Rejection::no_provider);
  EXPECT_NEAR(gpu.usd_per_hour, 2 * per_gpu, 1e-12);
  EXPECT_DOUBLE_EQ(gpu.queue_wait_hours, 0.5);
  EXPECT_NEAR(gpu.estimated_hours, 5.0, 1e-9);  // 10 V100-hours on two
  EXPECT_NEAR(gpu.completion_hours, 5.5, 1e-9);
  EXPECT_EQ(s.table[1].rejection, Rejection::too_few_gpus);  // one GPU per node: a job takes one node
  EXPECT_NE(d.choice.kind, OptionKind::slurm);
  EXPECT_EQ(s.json["candidates"][0]["option"], "slurm");
  EXPECT_EQ(s.json["candidates"][0]["provider"], "slurm");
  EXPECT_EQ(s.json["candidates"][0]["partition"], "gpu");
  EXPECT_EQ(s.json["candidates"][0]["machine_gpus"], 4);
  EXPECT_DOUBLE_EQ(s.json["candidates"][0]["queue_wait_hours"].get<double>(), 0.5);
  EXPECT_EQ(s.json["candidates"][0]["rejected"], "no Slurm cluster is configured to submit it");

  s.config.slurm_launchable = true;
  d = s.decide(j);
  EXPECT_EQ(d.outcome, Outcome::launch_slurm);
  EXPECT_EQ(d.choice.kind, OptionKind::slurm);
  EXPECT_EQ(d.choice.source, 0u);
  EXPECT_NE(s.reason.find("slurm gpu V100 x2 (4-GPU node)"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("Slurm's queue is expected to start it in 30 min"), std::string::npos) << s.reason;
  // Three GPUs wait longer (3 h); a deadline of 5 h is then missed there, and met in the cloud.
  j.workload.gpus = 3;
  j.deadline_hours = 5.0;
  d = s.decide(j);
  EXPECT_DOUBLE_EQ(s.table[0].queue_wait_hours, 3.0);
  EXPECT_FALSE(s.table[0].meets_deadline);
  EXPECT_NE(d.choice.kind, OptionKind::slurm);
  // Five GPUs fit no node of it.
  j.workload.gpus = 5;
  j.deadline_hours.reset();
  d = s.decide(j);
  EXPECT_EQ(s.table[0].rejection, Rejection::too_few_gpus);
  // A cloud-only job does not go to owned GPUs.
  j.workload.gpus = 1;
  j.mode = train::PlacementMode::cloud;
  d = s.decide(j);
  EXPECT_EQ(s.table[0].rejection, Rejection::placement_mode);
}

// A model name is a family, a memory or a variant: "A100" takes every A100, "A100-80GB" only the
// 80 GB ones, "RTX 4090" the RTX4090 pool whatever the spelling.
TEST(Placement, GpuNamesAreRequestsForVariants) {
  Scenario s;
  s.capacity = LocalCapacity{{worker("w4090", "NVIDIA GeForce RTX 4090", 24)}};
  s.catalog = {offer("aws", "p4d.24xlarge", "A100", 8, 40, 32.7726, 6.79),
               offer("aws", "p4de.24xlarge", "A100-80GB", 8, 80, 40.97, 8.0)};
  Job j = job();
  j.gpu = "A100";
  s.decide(j);
  size_t a100_rows = 0;
  for (const auto& c : s.table) a100_rows += c.kind != OptionKind::local && c.rejection != Rejection::gpu_constraint;
  EXPECT_EQ(a100_rows, 4u);  // both offers, on-demand and spot
  j.gpu = "A100-80GB";
  auto d = s.decide(j);
  EXPECT_EQ(s.catalog[d.choice.source].instance_type, "p4de.24xlarge");
  EXPECT_EQ(s.table[1].rejection, Rejection::gpu_constraint);  // p4d on demand: a 40 GB A100
  for (const char* name : {"RTX4090", "rtx 4090", "4090", "GeForce RTX 4090"}) {
    j.gpu = name;
    d = s.decide(j);
    EXPECT_EQ(d.outcome, Outcome::run_local) << name;
  }
}

TEST(Placement, BusyLocalPoolWaitsOrGoesToTheCloud) {
  Scenario s;
  const int64_t now = 1'000'000;
  ASSERT_TRUE(s.capacity.acquire(0, now + 2 * 3'600'000));
  ASSERT_TRUE(s.capacity.acquire(0, now + 3 * 3'600'000));
  Job j = job();
  j.submitted_ms = now;
  auto d = s.decide(j, now);  // no deadline: still cheapest to wait 2 h for the owned V100
  EXPECT_EQ(d.outcome, Outcome::wait_local);
  EXPECT_DOUBLE_EQ(d.choice.queue_wait_hours, 2.0);
  EXPECT_DOUBLE_EQ(d.choice.completion_hours, 12.0);
  EXPECT_NE(s.reason.find("waiting for a worker, expected free in 2.00 h"), std::string::npos) << s.reason;
  j.deadline_hours = 11;  // waiting would miss it: the cheapest cloud option that makes it
  d = s.decide(j, now);
  EXPECT_EQ(d.outcome, Outcome::launch_spot);
  EXPECT_EQ(s.catalog[d.choice.source].instance_type, "p3.2xlarge");
  EXPECT_FALSE(s.table[0].meets_deadline);
}

TEST(Placement, MarginalPricingAndCalibrationChangeTheAnswer) {
  Scenario s;
  s.capacity = LocalCapacity{};
  cost::LocalGpuInventory expensive = v100_inventory();
  expensive.purchase_usd = 60000;  // 3.42 $/h amortised: dearer than V100 on-demand
  s.inventory = {expensive};
  s.capacity = LocalCapacity{{worker("w1")}};
  Job j = job();
  j.deadline_hours = 10.5;   // only V100 (10 h) and A100 make it; A100 on-demand costs 10.45
  j.spot = train::SpotMode::never;
  auto d = s.decide(j);
  EXPECT_EQ(s.catalog[d.choice.source].instance_type, "gpu_1x_a100");
  s.config.local_pricing = cost::LocalPricing::marginal;  // capex is sunk: the owned GPU is free
  d = s.decide(j);
  EXPECT_EQ(d.choice.kind, OptionKind::local);
  EXPECT_DOUBLE_EQ(d.choice.usd_per_hour, 0.0);
  // Calibration: V100 MLPs turn out to run at 2.5% of peak, so 20 h: the local V100 misses it.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(s.calibration.observe("V100", "mlp", 15.7e12 * 0.025, 1.0));
  d = s.decide(j);
  EXPECT_NEAR(s.table[0].estimated_hours, 20.0, 1e-9);
  EXPECT_EQ(s.catalog[d.choice.source].instance_type, "gpu_1x_a100");
}

// The daemon trusts rejection_key: jobs that share it are rejected by the same candidates, so one
// decision stands for all of them while workers and offers stay the same.
TEST(Placement, JobsWithOneRejectionKeyAreRejectedByTheSameCandidates) {
  Scenario s;
  auto rejections = [&s](const Job& j) {
    s.decide(j);
    std::vector<Rejection> out;
    for (const auto& c : s.table) out.push_back(c.rejection);
    return out;
  };
  Job base = job(10);
  base.workload.vram_bytes_per_gpu = static_cast<int64_t>(20 * kGiB);  // fits the 40 GB A100s only
  base.max_usd_per_hour = 2.0;
  // Size of the work, deadline, priority and submission time: the same key, the same rejections.
  std::vector<Job> alike(4, base);
  alike[0].workload.training_flops *= 30;
  alike[1].deadline_hours = 0.5;
  alike[2].priority = 90;
  alike[3].submitted_ms = 3'600'000;
  for (const Job& j : alike) {
    EXPECT_EQ(rejection_key(j), rejection_key(base));
    EXPECT_EQ(rejections(j), rejections(base));
  }
  // Each input of a rejection changes the key (and here the rejections too).
  std::vector<Job> differ(7, base);
  differ[0].mode = train::PlacementMode::local;
  differ[1].spot = train::SpotMode::never;
  differ[2].gpu = "T4";
  differ[3].workload.gpus = 8;
  differ[4].workload.vram_bytes_per_gpu = static_cast<int64_t>(1 * kGiB);
  differ[5].max_usd_per_hour = 40.0;
  differ[6].max_usd_per_hour.reset();
  for (const Job& j : differ) {
    EXPECT_NE(rejection_key(j), rejection_key(base));
    EXPECT_NE(rejections(j), rejections(base));
  }
  Job cnn = base;
  cnn.workload.model_kind = "cnn";
  Job bf16 = base;
  bf16.workload.precision = cost::Precision::bf16;
  EXPECT_NE(rejection_key(cnn), rejection_key(base));
  EXPECT_NE(rejection_key(bf16), rejection_key(base));
}

TEST(Placement, QuoteJsonHasTheTable) {
  Scenario s;
  Job j = job();
  j.deadline_hours = 24;
  s.decide(j);
  const auto& q = s.json;
  EXPECT_EQ(q["outcome"], "run_local");
  EXPECT_EQ(q["reason_code"], "cheapest_meeting_deadline");
  EXPECT_TRUE(q["reason"].get<std::string>().starts_with("cheapest option meeting the deadline"));
  EXPECT_EQ(q["decided_ms"], 0);
  EXPECT_EQ(q["remaining_fraction"], 1.0);
  EXPECT_TRUE(q["deadline_policy"].is_null());
  EXPECT_EQ(q["considered"], 9);
  ASSERT_EQ(q["candidates"].size(), 9u);
  // docs/api.md, "The placement document": every row has these; a rejected row also names why.
  for (const auto& row : q["candidates"]) {
    for (const char* k : {"option", "label", "provider", "cloud", "region", "instance_type", "gpu", "gpus",
                          "usd_per_hour", "queue_wait_hours", "estimated_hours", "estimated_cost_usd",
                          "completion_hours", "meets_deadline", "chosen"})
      EXPECT_TRUE(row.contains(k)) << k;
    EXPECT_EQ(row.contains("rejection"), row.contains("rejected"));
  }
  EXPECT_EQ(q["candidates"][0]["option"], "local");
  EXPECT_EQ(q["candidates"][0]["provider"], "local");
  EXPECT_EQ(q["candidates"][1]["option"], "on_demand");
  EXPECT_EQ(q["candidates"][1]["label"], "on-demand aws:p3.2xlarge us-east-1");
  EXPECT_EQ(q["candidates"][1]["provider"], "sim");
  EXPECT_EQ(q["candidates"][1]["instance_type"], "p3.2xlarge");
  EXPECT_EQ(q["chosen"]["label"], "local V100 x1");
  EXPECT_FALSE(q["chosen"].contains("chosen"));
  int chosen = 0;
  for (const auto& row : q["candidates"]) chosen += row["chosen"].get<bool>();
  EXPECT_EQ(chosen, 1);
}


// A command job (the user's own program) runs only where a worker runs command jobs: a local pool
// whose workers were started without --allow-commands is rejected with that reason, never chosen
// to wait on; the cloud, whose instances jobctld starts for the job with commands allowed, is
// chosen instead, unless the provider cannot start such a worker. Workers that do run commands
// form their own pool.
TEST(Placement, ACommandJobGoesOnlyWhereCommandsRun) {
  Scenario s;
  Job j = job();
  j.command = true;
  auto d = s.decide(j);
  ASSERT_FALSE(s.table.empty());
  EXPECT_EQ(s.table[0].kind, OptionKind::local);
  EXPECT_EQ(s.table[0].rejection, Rejection::no_commands);
  EXPECT_NE(d.choice.kind, OptionKind::local);
  EXPECT_EQ(d.rejected[static_cast<size_t>(Rejection::no_commands)], 1u);
  EXPECT_NE(s.json["candidates"][0]["rejected"].get<std::string>().find("--allow-commands"), std::string::npos)
      << s.json["candidates"][0].dump();
  // The same job that is not a command job runs on the local pool.
  j.command = false;
  EXPECT_EQ(s.decide(j).choice.kind, OptionKind::local);
  // A rejection key tells the two apart: a job that was unplaceable as one is not as the other.
  Job as_command = j;
  as_command.command = true;
  EXPECT_NE(rejection_key(j), rejection_key(as_command));

  // One worker that runs commands: a pool of its own, chosen.
  Worker runs = worker("w3");
  runs.runs_commands = true;
  s.capacity.add_worker(runs);
  ASSERT_EQ(s.capacity.pools().size(), 2u);
  j.command = true;
  d = s.decide(j);
  EXPECT_EQ(d.choice.kind, OptionKind::local);
  EXPECT_EQ(d.outcome, Outcome::run_local);
  EXPECT_TRUE(s.capacity.pools()[d.choice.source].runs_commands);

  // Without a cloud that can start a worker for it and without such a worker, nothing runs it.
  s.capacity = LocalCapacity{{worker("w1")}};
  s.config.cloud_runs_commands = false;
  d = s.decide(j);
  EXPECT_EQ(d.outcome, Outcome::unplaceable);
  for (const Candidate& c : s.table)
    if (c.kind != OptionKind::local && c.rejection != Rejection::no_spot_market)
      EXPECT_EQ(c.rejection, Rejection::no_commands) << to_string(c.kind);
}

// A job in an image runs only where a worker runs containers and allows its mounts: the local
// pool of plain command workers is rejected (no_containers, naming --container-runtime), as is
// the cloud unless cloud.containers says its instances run them; a pool whose workers run
// containers and allow /srv/data takes a read-only mount of it, not a writable one, nor one of
// another folder. The rejection key tells mounts apart.
TEST(Placement, AJobInAnImageGoesOnlyWhereContainersRunAndItsMountsAreAllowed) {
  Scenario s;
  Worker plain = worker("w1");
  plain.runs_commands = true;
  s.capacity = LocalCapacity{{plain}};
  Job j = job();
  j.command = true;
  j.image = true;
  j.mounts = {{"/srv/data/fmnist", "/data", false}};
  auto d = s.decide(j);
  EXPECT_EQ(d.outcome, Outcome::unplaceable);
  ASSERT_FALSE(s.table.empty());
  EXPECT_EQ(s.table[0].rejection, Rejection::no_containers);
  EXPECT_NE(s.json["candidates"][0]["rejected"].get<std::string>().find("--container-runtime podman"), std::string::npos)
      << s.json["candidates"][0].dump();
  for (const Candidate& c : s.table)
    if (c.kind != OptionKind::local && c.rejection != Rejection::no_spot_market)
      EXPECT_EQ(c.rejection, Rejection::no_containers) << to_string(c.kind);

  // Workers with podman that allow /srv/data: a pool of their own, chosen.
  Worker boxed = worker("w2");
  boxed.runs_commands = true;
  boxed.containers = {true, {{"/srv/data", false}}};
  s.capacity.add_worker(boxed);
  ASSERT_EQ(s.capacity.pools().size(), 2u);
  d = s.decide(j);
  EXPECT_EQ(d.outcome, Outcome::run_local);
  EXPECT_TRUE(s.capacity.pools()[d.choice.source].containers.runs_images);

  // A writable mount there, or a folder it does not allow: rejected, the mount named.
  Job writes = j;
  writes.mounts[0].writable = true;
  EXPECT_EQ(s.decide(writes).outcome, Outcome::unplaceable);
  EXPECT_NE(s.json["candidates"][1]["rejected"].get<std::string>().find("/srv/data/fmnist (writable)"), std::string::npos)
      << s.json["candidates"][1].dump();
  Job elsewhere = j;
  elsewhere.mounts[0].source = "/home/alice";
  EXPECT_EQ(s.decide(elsewhere).outcome, Outcome::unplaceable);
  EXPECT_NE(rejection_key(j), rejection_key(elsewhere));
  EXPECT_NE(rejection_key(j), rejection_key(writes));

  // The cloud's instances run containers when configured so (with the same mount rule).
  s.capacity = LocalCapacity{{plain}};
  s.config.cloud_containers = {true, {{"/srv/data", false}}};
  d = s.decide(j);
  EXPECT_TRUE(is_cloud(d.choice.kind)) << to_string(d.choice.kind);
  EXPECT_EQ(s.decide(elsewhere).outcome, Outcome::unplaceable);
  // A plain command job is not held to any of it.
  Job plain_command = j;
  plain_command.image = false;
  plain_command.mounts.clear();
  s.config.cloud_containers = {};
  EXPECT_NE(s.decide(plain_command).outcome, Outcome::unplaceable);
}

// A 7B full fine-tune (bf16, AdamW, seq 2048) described by estimate.model: placement with
// resources.gpus "auto" lists each GPU model at the smallest count that holds it, with its memory
// per GPU and cost; a fixed count that cannot fit is refused at submit with the figures.
// Llama-2-7B's shape, fully fine-tuned on 1B tokens: bf16, AdamW, selective recomputation, ZeRO-3.
std::string seven_b_spec(const std::string& gpus, const std::string& gpu = "any") {
  return R"({"command": ["python3", "finetune.py"], "resources": {"gpu": ")" + gpu + R"(", "gpus": )" + gpus + R"(},
    "estimate": {"model": {"layers": 32, "hidden": 4096, "heads": 32, "vocab": 32000, "seq_len": 2048,
      "micro_batch": 1, "tokens": 1000000000, "precision": "bf16", "optimizer": "adamw",
      "recompute": "selective", "zero_stage": 3}}})";
}

Job seven_b_job(const std::string& text) {
  auto spec = train::parse_job_spec(text);
  EXPECT_TRUE(spec) << spec.error().message;
  return job_from_spec("j7b", *spec, train::model_stats(*spec), 0);
}

// The seed catalog's prices (docs/cost-model.md), memory per GPU as the catalogs give it.
std::vector<cost::Offer> seven_b_catalog() {
  return {offer("aws", "p4d.24xlarge", "A100", 8, 40, 32.7726, std::nullopt),
          offer("aws", "p5.48xlarge", "H100", 8, 80, 98.32, std::nullopt),
          offer("aws", "g5.xlarge", "A10G", 1, 22888.0 / 1024, 1.006, std::nullopt),
          offer("aws", "g5.48xlarge", "A10G", 8, 22888.0 / 1024, 16.288, std::nullopt)};
}

// The seed catalog's 7B-capable instances, launchable, with no owned GPUs.
struct SevenBCloud {
  static PlacementConfig launchable() {
    PlacementConfig c;
    c.cloud_launchable = true;
    return c;
  }
  // A transformer's bf16 rate on one GPU of the offer (FLOPs per hour).
  double transformer_rate(const cost::Offer& o) const {
    return ctx.flops_per_hour(ctx.model_id(cost::canonical_gpu_name(o.gpu_model, o.gpu_memory_gb)),
                              model_kind_index("transformer"), static_cast<int>(cost::Precision::bf16));
  }

  cost::EfficiencyCalibrator calibration;
  PlacementConfig config = launchable();
  PlacementContext ctx{seven_b_catalog(), {}, calibration, config};
  LocalCapacity capacity;
};

TEST(GpuCountFit, AutoListsEachGpuModelAtTheSmallestCountThatHoldsIt) {
  const Job job = seven_b_job(seven_b_spec(R"("auto")"));
  ASSERT_TRUE(job.workload.gpus_auto);
  SevenBCloud cloud;
  const PlacementConfig& config = cloud.config;
  const PlacementContext& ctx = cloud.ctx;
  const LocalCapacity& capacity = cloud.capacity;
  std::vector<Candidate> table;
  const PlacementDecision d = place(job, ctx, capacity, 0, &table);
  const nlohmann::json doc = placement_json(d, table, job, ctx, capacity, PlacementDocumentInfo{"sim", 0, 1.0});
  ASSERT_NE(d.outcome, Outcome::unplaceable) << decision_reason(d, job, ctx, capacity);

  int fitting = 0;
  for (size_t i = 0; i < table.size(); ++i) {
    const Candidate& c = table[i];
    if (c.kind != OptionKind::on_demand) continue;
    const cost::Offer& o = ctx.offers()[c.source];
    const double memory = o.gpu_memory_gb * kGiB;
    const auto& row = doc["candidates"][i];
    if (o.gpu_model == "A10G") {
      // 107.7 GB of model state and 9.1 GB of activations: not even eight 24 GB cards hold it.
      EXPECT_EQ(c.rejection, Rejection::memory) << o.name();
      EXPECT_EQ(c.gpus, o.gpu_count);
      EXPECT_NE(row["rejected"].get<std::string>().find("GiB per GPU with ZeRO-3 on " + std::to_string(o.gpu_count)),
                std::string::npos)
          << row["rejected"];
      continue;
    }
    ++fitting;
    EXPECT_EQ(c.rejection, Rejection::none) << o.name();
    // The smallest count: it fits, one fewer does not.
    EXPECT_LE(static_cast<double>(c.vram_bytes_per_gpu), memory);
    EXPECT_EQ(c.vram_bytes_per_gpu, cost::vram_bytes_for(job.workload, c.gpus));
    EXPECT_GT(static_cast<double>(cost::vram_bytes_for(job.workload, c.gpus - 1)), memory);
    EXPECT_EQ(row["job_gpus"], c.gpus);
    EXPECT_NEAR(row["memory_gib_per_gpu"].get<double>(), static_cast<double>(c.vram_bytes_per_gpu) / kGiB, 1e-9);
    // Priced at the instance's price for the time on that many GPUs.
    const double flops = cost::estimate_transformer(*job.workload.transformer, c.gpus).training_flops;
    const double rate = cloud.transformer_rate(o);
    EXPECT_NEAR(c.estimated_hours, flops / (rate * c.gpus), 1e-9);
    EXPECT_NEAR(c.estimated_cost_usd, o.on_demand_usd_per_hour * (c.estimated_hours + config.provision_hours), 1e-9);
  }
  EXPECT_EQ(fitting, 2);  // the 8 x A100 40 GB and the 8 x H100 80 GB instances
  // 80 GB GPUs need fewer than 40 GB ones.
  int a100 = 0, h100 = 0;
  for (const Candidate& c : table)
    if (c.kind == OptionKind::on_demand && c.rejection == Rejection::none)
      (ctx.offers()[c.source].gpu_model == "A100" ? a100 : h100) = c.gpus;
  EXPECT_EQ(a100, 4);
  EXPECT_EQ(h100, 2);
}

// Work given in steps: the tokens grow with the data-parallel GPUs, so each option is timed for
// the tokens of the count it gets (two H100s train twice the tokens of one, in the same time).
TEST(GpuCountFit, WorkInStepsIsTimedForTheTokensOfEachCount) {
  std::string text = seven_b_spec(R"("auto")");
  text.replace(text.find(R"("tokens": 1000000000)"), std::string(R"("tokens": 1000000000)").size(), R"("steps": 1000)");
  const Job job = seven_b_job(text);
  ASSERT_TRUE(job.workload.gpus_auto);
  SevenBCloud cloud;
  std::vector<Candidate> table;
  place(job, cloud.ctx, cloud.capacity, 0, &table);
  int timed = 0;
  for (const Candidate& c : table) {
    if (c.kind != OptionKind::on_demand || c.rejection != Rejection::none) continue;
    const cost::Offer& o = cloud.ctx.offers()[c.source];
    ASSERT_GT(c.gpus, 1) << o.name();
    const double flops = cost::estimate_transformer(*job.workload.transformer, c.gpus).training_flops;
    EXPECT_NEAR(flops, c.gpus * cost::estimate_transformer(*job.workload.transformer, 1).training_flops, flops * 1e-12);
    EXPECT_NEAR(cost::training_flops_for(job.workload, c.gpus), flops, flops * 1e-12);
    EXPECT_NEAR(c.estimated_hours, flops / (cloud.transformer_rate(o) * c.gpus), 1e-9) << o.name();
    ++timed;
  }
  EXPECT_EQ(timed, 2);
}

TEST(GpuCountFit, AFixedCountThatCannotFitIsRefusedWithTheFigures) {
  const Job job = seven_b_job(seven_b_spec("1", "A10G"));
  const std::vector<Machine> fleet{Machine{"aws:g5.xlarge", cost::find_gpu("A10G"), "A10G", 1, 24, true}};
  const auto st = check_feasible(job, fleet);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().field, "resources.gpus");
  const double need = static_cast<double>(job.workload.vram_bytes_per_gpu) / kGiB;
  EXPECT_GT(need, 100.0);  // 16 bytes x 6.74B parameters on one GPU, before activations
  char figure[32];
  std::snprintf(figure, sizeof figure, "%.2f GiB", need);
  const std::string& m = st.error().message;
  EXPECT_NE(m.find(std::string("needs ") + figure + " per GPU with ZeRO-3 on 1 GPU"), std::string::npos) << m;
  EXPECT_NE(m.find("an A10G has 24.00 GiB"), std::string::npos) << m;
  // "auto" on the same fleet: no count of its one GPU holds it either, and the message says so.
  const auto auto_st = check_feasible(seven_b_job(seven_b_spec(R"("auto")", "A10G")), fleet);
  ASSERT_FALSE(auto_st);
  EXPECT_NE(auto_st.error().message.find("fits no machine at any count of its GPUs"), std::string::npos)
      << auto_st.error().message;
  // On an 8 x H100 machine "auto" is feasible.
  EXPECT_TRUE(check_feasible(seven_b_job(seven_b_spec(R"("auto")")),
                             std::vector<Machine>{Machine{"aws:p5", cost::find_gpu("H100"), "H100", 8, 80, true}}));
}

// The bound on a jump while cheaper offers cool down: above max_ratio x the usual price and above
// that offer on demand, a job waits for it — unless it has a cap of its own, waiting would miss
// its deadline, or nothing is set aside.
TEST(PriceJump, AJobWaitsForACoolingOfferRatherThanPayManyTimesItsPrice) {
  PlacementDecision usable, every;
  usable.outcome = Outcome::launch_spot;
  usable.choice.usd_per_hour = 4.85;  // an 8-GPU instance's spot market
  every.outcome = Outcome::launch_spot;
  every.choice.usd_per_hour = 0.52;   // the 1-GPU offer set aside
  every.choice.completion_hours = 2;
  Job job;
  auto ceiling = price_jump_ceiling(job, usable, every, 3.06, 0.2, 3);
  ASSERT_TRUE(ceiling);
  EXPECT_DOUBLE_EQ(*ceiling, 3.06);  // its on-demand price is above 3 x 0.52
  EXPECT_DOUBLE_EQ(*price_jump_ceiling(job, usable, every, 1.0, 0.2, 3), 3 * 0.52);
  // Spot's customary fallback, the same offer on demand (or anything up to it), is no jump.
  usable.choice.usd_per_hour = 3.06;
  EXPECT_FALSE(price_jump_ceiling(job, usable, every, 3.06, 0.2, 3));
  usable.choice.usd_per_hour = 4.85;
  EXPECT_FALSE(price_jump_ceiling(job, usable, every, 3.06, 0, 3)) << "nothing cools down";
  EXPECT_FALSE(price_jump_ceiling(job, usable, every, 3.06, 0.2, 0)) << "no bound configured";
  job.max_usd_per_hour = 10;
  EXPECT_FALSE(price_jump_ceiling(job, usable, every, 3.06, 0.2, 3)) << "the job's own cap bounds it";
  job.max_usd_per_hour.reset();
  usable.deadline_left_hours = 2.1;
  EXPECT_FALSE(price_jump_ceiling(job, usable, every, 3.06, 0.2, 3)) << "waiting 0.2 h + 2 h misses the deadline";
  usable.deadline_left_hours = 2.3;
  EXPECT_TRUE(price_jump_ceiling(job, usable, every, 3.06, 0.2, 3));
  usable.outcome = Outcome::run_local;
  EXPECT_FALSE(price_jump_ceiling(job, usable, every, 3.06, 0.2, 3)) << "only cloud launches";
}

}  // namespace
}  // namespace jobctl::scheduler
