// The savings baseline: owned time is compared with the on-demand price of the same GPU model and
// count (the catalog's cheapest on-demand offer of that model, per GPU-hour, times the job's GPUs),
// never with another GPU's; time on a GPU that no on-demand offer has is "no on-demand
// equivalent" in the ledger, the spend report and the job's cost. A real store and placement over
// the built-in catalog; the figures by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/readable.h"
#include "cost/spend_report.h"
#include "daemon/ledger/job_segments.h"
#include "daemon/ledger/ledger_report.h"
#include "tests/daemon/placement_support.h"

namespace jobctl::daemon::testing {
namespace {

using nlohmann::json;

constexpr int64_t kHourMs = 3'600'000;
// p5.48xlarge (8 x H100-SXM) on demand in the built-in catalog: $98.32/h, $12.29 per GPU-hour.
constexpr double kP5UsdPerHour = 98.32;
constexpr double kH100OnDemandPerGpu = kP5UsdPerHour / 8;

// An owned GPU priced at purchase / (4 years x 8760 h x 50%) with no power: $61,320 -> $3.50/h.
cost::LocalGpuInventory owned(const std::string& model, double purchase_usd) {
  cost::LocalGpuInventory g;
  g.gpu_model = model;
  g.count = 8;
  g.purchase_usd = purchase_usd;
  g.power_kw = 0;
  g.electricity_usd_per_kwh = 0;
  return g;
}

placement::PlacementSettings settings_with(cost::LocalGpuInventory inventory) {
  placement::PlacementSettings s;
  s.local_gpus = {std::move(inventory)};
  s.default_electricity_usd_per_kwh = 0;
  s.clouds = {"aws"};  // the catalog's H100 rows: p5.48xlarge only
  return s;
}

void run_for(PlacementFixture& f, int64_t worker, int64_t job, int64_t ms) {
  ASSERT_EQ(f.lease(worker), job);
  f.clock.advance_ms(ms);
  auto r = f.svc->complete(job, jobs::CompletionReport{{worker, f.job(job).lease_epoch}, R"({"elapsed_s": 1})"});
  ASSERT_TRUE(r) << r.error().message;
}

std::vector<jobs::GpuDevice> h100s(int n) { return std::vector<jobs::GpuDevice>(n, {"NVIDIA H100 80GB HBM3", 81559}); }

// A "gpu: any" job on an owned 8 x H100 box: its hour is compared with an H100's on-demand hour
// ($12.29), not with whichever on-demand GPU could have run it cheapest (an L4 or a T4 made owned
// H100s read -17% to -842% "saved"). By hand: 1 - 3.50 / 12.29 = 71.5%.
TEST(SavingsBaseline, AnOwnedH100HourIsComparedWithAnOnDemandH100Hour) {
  PlacementFixture f(settings_with(owned("H100-SXM", 61'320)));
  ASSERT_NEAR(f.billing->usd_per_gpu_hour("H100-SXM"), 3.50, 1e-12);
  const int64_t w = f.add_worker(h100s(8));
  const int64_t job = f.submit(mlp_spec(R"(,"resources":{"gpu":"any","gpus":1})"));
  EXPECT_EQ(f.placement_of(job)["chosen"]["option"], "local");
  run_for(f, w, job, kHourMs);

  auto report = ledger::spend_report(*f.ledger, 0, f.clock.now_ms() + 1, "job");
  ASSERT_TRUE(report);
  ASSERT_EQ(report->groups.size(), 1u);
  const cost::SpendGroup& g = report->groups[0];
  EXPECT_NEAR(g.usd, 3.50, 1e-9);
  EXPECT_NEAR(g.on_demand_usd, kH100OnDemandPerGpu, 1e-9) << "one H100 for an hour on demand";
  EXPECT_NEAR(g.savings_fraction(), 1 - 3.50 / 12.29, 1e-9);
  EXPECT_EQ(readable::percent(g.savings_fraction()), "71.5%");
  EXPECT_GT(g.savings_usd(), 0) << "owned H100s cheaper than on-demand H100s never read as a loss";

  // Two GPUs: twice the on-demand H100 hour.
  const int64_t two = f.submit(mlp_spec(R"(,"resources":{"gpu":"H100","gpus":2})"));
  run_for(f, w, two, kHourMs);
  auto cost = f.db->ledger_rows_of_job(two);
  ASSERT_TRUE(cost);
  const ledger::JobCost c = ledger::job_cost(*cost);
  EXPECT_NEAR(c.usd, 2 * 3.50, 1e-9);
  EXPECT_NEAR(c.on_demand_usd, 2 * kH100OnDemandPerGpu, 1e-9);
}

// A job that ran an hour on demand on a p5.48xlarge (the whole instance billed, $98.32) and was then
// moved to an owned H100 for an hour (`jobctl move --to local`): the owned hour is compared with an
// on-demand H100 hour, the instance hour with itself. By hand: the owned segment saves
// 12.29 - 3.50 = $8.79 (71.5%); the job $8.79 of $110.61.
TEST(SavingsBaseline, AJobMovedToAnOwnedGpuIsComparedWithTheSameGpuOnDemand) {
  PlacementFixture f(settings_with(owned("H100-SXM", 61'320)));
  const int64_t w = f.add_worker(h100s(8));
  const int64_t job = f.submit(mlp_spec(R"(,"resources":{"gpu":"any","gpus":1})"));
  // Its hour on the instance, as the provisioner bills one (the instance's own on-demand price).
  const int64_t t0 = f.clock.now_ms();
  ASSERT_TRUE(f.ledger->accrue(
      ledger::LedgerEntry{job, "instance:i-p5", "on_demand", t0, t0 + kHourMs, kP5UsdPerHour, "", kP5UsdPerHour}));
  f.clock.advance_ms(kHourMs);
  run_for(f, w, job, kHourMs);

  auto rows = f.db->ledger_rows_of_job(job);
  ASSERT_TRUE(rows);
  const ledger::JobCost c = ledger::job_cost(*rows);
  ASSERT_EQ(c.segments.size(), 2u);
  EXPECT_EQ(c.segments[0].kind, "on_demand");
  EXPECT_NEAR(c.segments[0].on_demand_usd, kP5UsdPerHour, 1e-9);
  EXPECT_EQ(c.segments[1].kind, "local");
  EXPECT_NEAR(c.segments[1].usd, 3.50, 1e-9);
  EXPECT_NEAR(c.segments[1].on_demand_usd, 12.29, 1e-9);
  EXPECT_EQ(readable::percent(1 - c.segments[1].usd / c.segments[1].on_demand_usd), "71.5%");
  EXPECT_NEAR(c.saved_usd(), 8.79, 1e-9);
  EXPECT_NEAR(c.on_demand_usd, 110.61, 1e-9);
}

// An owned RTX 4090: no on-demand offer in the catalog has one, so its time has no on-demand
// equivalent. The ledger stores none, the spend report's on-demand figure and savings are null
// ("no on-demand equivalent" in the CLI's table), the job's cost says the same — never an
// on-demand T4's or L4's hour instead.
TEST(SavingsBaseline, AGpuWithNoOnDemandOfferHasNoOnDemandEquivalent) {
  auto settings = settings_with(owned("RTX4090", 1'752));  // $0.10/h
  settings.clouds.clear();
  PlacementFixture f(std::move(settings));
  const int64_t w = f.add_worker({{"NVIDIA GeForce RTX 4090", 24564}});
  const int64_t job = f.submit(mlp_spec(R"(,"resources":{"gpu":"any","gpus":1})"));
  run_for(f, w, job, kHourMs);

  auto rows = f.db->ledger_rows_of_job(job);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_NEAR((*rows)[0].usd, 0.10, 1e-9);
  EXPECT_EQ((*rows)[0].on_demand_usd_per_hour, 0.0);
  const ledger::JobCost c = ledger::job_cost(*rows);
  EXPECT_FALSE(c.has_equivalent());
  EXPECT_FALSE(c.segments[0].has_equivalent);
  EXPECT_NEAR(c.no_equivalent_usd, 0.10, 1e-9);

  auto report = ledger::spend_report(*f.ledger, 0, f.clock.now_ms() + 1, "placement");
  ASSERT_TRUE(report);
  EXPECT_FALSE(report->total.has_equivalent());
  const json j = cost::to_json(*report);
  EXPECT_TRUE(j["total"]["on_demand_usd"].is_null()) << j.dump();
  EXPECT_TRUE(j["total"]["savings_usd"].is_null()) << j.dump();
  EXPECT_TRUE(j["total"]["savings_fraction"].is_null()) << j.dump();
  EXPECT_NEAR(j["total"]["no_on_demand_equivalent_usd"].get<double>(), 0.10, 1e-9);
  // The CLI reads it back as such.
  auto back = cost::spend_report_from_json(j);
  ASSERT_TRUE(back);
  EXPECT_FALSE(back->total.has_equivalent());
  EXPECT_NE(cost::spend_csv(*back).find(",0.1000,,,,0.1000\n"), std::string::npos) << cost::spend_csv(*back);

  // With an owned H100 hour beside it, the savings compare the H100 hour only and name the rest.
  std::vector<cost::SpendInterval> mixed{{0, kHourMs, 0.10, 0, 3600, false, "x"},
                                         {0, kHourMs, 3.50, 12.29, 3600, true, "x"}};
  const cost::SpendReport r = cost::aggregate_spend(mixed, 0, kHourMs, "job");
  EXPECT_TRUE(r.total.has_equivalent());
  EXPECT_NEAR(r.total.savings_usd(), 8.79, 1e-9);
  EXPECT_NEAR(r.total.no_equivalent_usd, 0.10, 1e-9);
}

// The reference from a placement document alone: the chosen GPU model's cheapest on-demand row per
// GPU-hour times the job's GPUs, whatever the rows' rejections; another model's row is none. A
// document from before "machine_gpus" gave the instance's GPUs as "gpus".
TEST(SavingsBaseline, TheReferenceIsTheSameModelsCheapestOnDemandGpuHour) {
  auto row = [](const std::string& option, const std::string& gpu, int machine_gpus, double usd_per_hour) {
    return json{{"option", option}, {"gpu", gpu}, {"gpu_memory_gib", 80}, {"gpus", 1}, {"job_gpus", 1},
                {"machine_gpus", machine_gpus}, {"usd_per_hour", usd_per_hour}, {"rejection", "no_provider"}};
  };
  json doc = {{"chosen", {{"option", "local"}, {"gpu", "H100-SXM"}, {"gpu_memory_gib", 80}, {"gpus", 2}, {"job_gpus", 2},
                          {"machine_gpus", 8}, {"usd_per_hour", 7.0}}},
              {"candidates", json::array({row("on_demand", "H100-SXM", 8, 98.32), row("on_demand", "H100-SXM", 1, 12.5),
                                          row("spot", "H100-SXM", 8, 30.0), row("on_demand", "L4", 1, 0.80)})}};
  auto ref = ledger::ledger_on_demand_reference(doc.dump());
  ASSERT_TRUE(ref);
  EXPECT_NEAR(*ref, 2 * 12.29, 1e-9) << "two H100s at p5's $98.32 / 8, not the 1-GPU row's $12.50 nor spot";

  json older = doc;
  for (auto& c : older["candidates"]) {
    c["gpus"] = c["machine_gpus"];
    c.erase("machine_gpus");
  }
  EXPECT_NEAR(*ledger::ledger_on_demand_reference(older.dump()), 2 * 12.29, 1e-9);

  json no_offer = doc;
  no_offer["chosen"]["gpu"] = "RTX4090";
  no_offer["chosen"]["gpu_memory_gib"] = 24;
  EXPECT_FALSE(ledger::ledger_on_demand_reference(no_offer.dump())) << "an L4's hour is no RTX 4090's";
  json cpu = doc;
  cpu["chosen"]["gpu"] = "cpu";
  EXPECT_FALSE(ledger::ledger_on_demand_reference(cpu.dump()));
}

}  // namespace
}  // namespace jobctl::daemon::testing
