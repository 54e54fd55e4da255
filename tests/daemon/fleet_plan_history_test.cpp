// The fleet plan from the daemon's own history (daemon/placement/fleet_plan_history.h): a real
// SQLite store holding two weeks of jobs and their ledger rows, as the lease ledger and the
// provisioner write them; the plan's replay of today's fleet (N = 0) against the spend report of
// the same ledger; and GET /v1/reports/plan over real HTTP on loopback, its bad inputs answered
// 400 naming the query parameter.
#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "client/http_client.h"
#include "daemon/ledger/ledger.h"
#include "daemon/ledger/ledger_report.h"
#include "daemon/placement/fleet_plan_history.h"
#include "daemon/placement/placement_matcher.h"
#include "daemon/placement/placement_service.h"
#include "tests/daemon/placement_api_server.h"
#include "tests/support/cost_cli.h"
#include "tests/support/temp_dir.h"

namespace jobctl::daemon::testing {
namespace {

using nlohmann::json;

constexpr int64_t kHourMs = 3'600'000;
constexpr int64_t kDayMs = 24 * kHourMs;
constexpr int kDays = 14;
constexpr double kOwnedPrice = 0.197207;  // the cost model's worked quote: one owned V100
constexpr double kOnDemand = 3.06;        // p3.2xlarge, seed facts
constexpr double kSpot = 0.5197;          // p3.2xlarge spot, seed catalog

int64_t day0_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(sys_days(year(2026) / 11 / 1).time_since_epoch()).count();
}

// Two weeks of a team with one owned V100 (worker 1), as jobctld would have recorded them:
//   - every day at 09:00 a 6 h V100 job on the owned GPU (local:1:gpu0, $0.197207/h);
//   - every day at 10:00 a 4 h V100 job, no deadline, on demand on p3.2xlarge ($3.06/h): the
//     owned GPU is busy until 15:00;
//   - every other day at 12:00 a 3 h V100 job with a 4 h deadline on p3.2xlarge spot ($0.5197/h):
//     waiting for the owned GPU (until 15:00) would miss it;
//   - one A100 job (1 h on p4d.24xlarge) and 6 minutes of an idle instance: spend the V100 plan
//     does not replay.
class History {
 public:
  History() : clock_(day0_ms() + (kDays + 1) * kDayMs) {
    store::StoreOptions o;
    o.path = dir_.file("jobctl.db");
    auto db = store::Store::open(o, clock_);
    EXPECT_TRUE(db);
    db_ = std::move(*db);
    worker_ = insert_worker();
    ledger::Ledger ledger(*db_);
    const int64_t d0 = day0_ms();
    for (int d = 0; d < kDays; ++d) {
      const int64_t day = d0 + d * kDayMs;
      run(ledger, "V100", day + 9 * kHourMs, 6, "local:" + std::to_string(worker_) + ":gpu0", "local", kOwnedPrice, {});
      run(ledger, "V100", day + 10 * kHourMs, 4, "instance:od-" + std::to_string(d), "on_demand", kOnDemand, {});
      if (d % 2 == 0) run(ledger, "V100", day + 12 * kHourMs, 3, "instance:sp-" + std::to_string(d), "spot", kSpot, 4.0);
    }
    run(ledger, "A100", d0 + 3 * kDayMs, 1, "instance:a100", "on_demand", 32.7726, {});
    EXPECT_TRUE(ledger.accrue({0, "instance:idle", "on_demand", d0 + 5 * kDayMs, d0 + 5 * kDayMs + kHourMs / 10, kOnDemand, "", 0}));
  }

  store::Store& store() { return *db_; }
  ManualClock& clock() { return clock_; }
  int64_t worker() const { return worker_; }
  // One more job of the history, billed on `resource`; `on_demand_usd_per_hour` 0: its time has no
  // on-demand equivalent.
  void add_job(const std::string& gpu, int64_t start_ms, int hours, const std::string& resource, const std::string& kind,
               double usd_per_hour, double on_demand_usd_per_hour) {
    ledger::Ledger ledger(*db_);
    run(ledger, gpu, start_ms, hours, resource, kind, usd_per_hour, {}, on_demand_usd_per_hour);
  }

 private:
  int64_t insert_worker() {
    store::WorkerRow w;
    w.name = "box";
    w.capabilities.gpus = {{"Tesla V100-SXM2-16GB", 16384}};
    w.capabilities.cpu_cores = 8;
    w.capabilities.memory_mb = 65536;
    w.registered_ms = day0_ms() - kDayMs;
    w.last_seen_ms = clock_.now_ms();
    auto id = db_->write_value<int64_t>([&](store::WriteTxn& txn) { return txn.insert_worker(w); });
    EXPECT_TRUE(id) << id.error().message;
    return *id;
  }

  void run(ledger::Ledger& ledger, const std::string& gpu, int64_t start_ms, int hours, const std::string& resource,
           const std::string& kind, double usd_per_hour, std::optional<double> deadline_hours,
           double on_demand_usd_per_hour = kOnDemand) {
    store::JobRow row;
    row.name = "j";
    json spec = {{"model", {{"kind", "mlp"}}}, {"resources", {{"gpu", gpu}, {"gpus", 1}}}};
    if (deadline_hours) spec["placement"] = {{"deadline_hours", *deadline_hours}};
    row.spec_json = spec.dump();
    row.state = scheduler::JobState::succeeded;
    row.resource_gpu = gpu;
    row.resource_gpus = 1;
    row.created_ms = start_ms;
    row.updated_ms = start_ms + hours * kHourMs;
    auto chosen = store::placement_choice_from_json(json{{"option", kind == "local" ? "local" : kind}, {"gpu", gpu}, {"gpus", 1}});
    ASSERT_TRUE(chosen) << chosen.error().message;
    row.chosen = std::move(*chosen);
    auto id = db_->write_value<int64_t>([&](store::WriteTxn& txn) { return txn.insert_job(row); });
    ASSERT_TRUE(id) << id.error().message;
    ASSERT_TRUE(ledger.accrue(
        {*id, resource, kind, start_ms, start_ms + hours * kHourMs, usd_per_hour, "", on_demand_usd_per_hour}));
  }

  jobctl::testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<store::Store> db_;
  int64_t worker_ = 0;
};

// `jobctl ARGS` against the daemon at `server`, as main.cpp drives the cost commands.
jobctl::testing::CostCliRun jobctl_cli(const std::string& server, const std::vector<std::string>& args) {
  return jobctl::testing::run_cost_cli(server, args);
}

placement::FleetPlanRequest v100_request() {
  placement::FleetPlanRequest r;
  r.from_ms = day0_ms();
  r.to_ms = day0_ms() + kDays * kDayMs;
  r.gpu = "V100";
  r.purchase_usd = 2000;
  r.lifetime_years = 3;
  return r;
}

TEST(FleetPlanHistory, TheReplayOfTodaysFleetReproducesTheLedgerTotal) {
  History h;
  ledger::Ledger ledger(h.store());
  auto spend = ledger::spend_report(ledger, day0_ms(), day0_ms() + kDays * kDayMs, "placement");
  ASSERT_TRUE(spend) << spend.error().message;
  auto plan = placement::fleet_plan(h.store(), placement::PlacementSettings{}, cost::seed_catalog(), v100_request(),
                                    h.clock().now_ms());
  ASSERT_TRUE(plan) << plan.error().message;
  // 14 + 14 + 7 V100 jobs; one owned V100 today (the registered worker, which the ledger billed).
  EXPECT_EQ(plan->input.jobs.size(), 35u);
  EXPECT_EQ(plan->input.owned_gpus_today, 1);
  EXPECT_NEAR(plan->input.owned_usd_per_gpu_hour_today, kOwnedPrice, 1e-9);
  // By hand: owned 14 x 6 x 0.197207 = 16.565388; on demand 14 x 4 x 3.06 = 171.36; spot
  // 7 x 3 x 0.5197 = 10.9137; A100 32.7726; idle 0.1 x 3.06 = 0.306. Total 231.917688.
  EXPECT_NEAR(spend->total.usd, 231.917688, 1e-4);
  EXPECT_NEAR(plan->input.other_usd, 32.7726 + 0.306, 1e-6);
  // N = 0 replays every job where it ran (the 10:00 job would wait 5 h for the owned GPU, the
  // spot job would miss its deadline waiting): within 1% of the ledger's real total.
  const cost::FleetPlanRow& today = plan->rows[0];
  EXPECT_LT(std::abs(today.total_usd - spend->total.usd) / spend->total.usd, 0.01)
      << today.total_usd << " against " << spend->total.usd;
  EXPECT_EQ(today.jobs_owned, 14);
  EXPECT_EQ(today.deadlines_missed, 0);
  // N = 1 takes the 10:00 jobs (their 171.36 on demand) for 2000 x 336 / 26280 = 25.570776 of
  // purchase and 56 h x 0.045 = 2.52 of power; the spot jobs still cannot wait (the bought GPU
  // frees at 14:00: 2 h + 3 h > 4 h). N = 2 would take them (7 x 3 x 0.5197 = 10.9137 of spot) for
  // another 25.570776 of purchase: more than it saves. So buy 1.
  EXPECT_EQ(plan->cheapest_extra_gpus, 1);
  EXPECT_NEAR(plan->rows[1].total_usd, today.total_usd - 171.36 + 25.570776 + 2.52, 1e-4);
  ASSERT_TRUE(plan->payback_months);
}

// Today's owned GPUs of a model are the owned GPUs of that model the ledger billed: a T4 job whose
// segment ran on the box's CPU owns no T4 ("1 owned T4" where none is), nor does it price one.
TEST(FleetPlanHistory, ACpuSegmentOfAGpuJobIsNoOwnedGpuOfItsModel) {
  History h;
  h.add_job("T4", day0_ms() + 2 * kDayMs, 2, "local:" + std::to_string(h.worker()) + ":cpu", "local", 0.0225, 0);
  h.add_job("T4", day0_ms() + 4 * kDayMs, 2, "instance:t4", "on_demand", 0.526, 0.526);
  auto req = v100_request();
  req.gpu = "T4";
  req.purchase_usd = 1000;
  auto plan = placement::fleet_plan(h.store(), placement::PlacementSettings{}, cost::seed_catalog(), req, h.clock().now_ms());
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->input.jobs.size(), 2u);
  EXPECT_EQ(plan->input.owned_gpus_today, 0) << "the box has a V100 and a CPU, no T4";
  // The V100 plan still counts the box's V100.
  auto v100 = placement::fleet_plan(h.store(), placement::PlacementSettings{}, cost::seed_catalog(), v100_request(),
                                    h.clock().now_ms());
  ASSERT_TRUE(v100) << v100.error().message;
  EXPECT_EQ(v100->input.owned_gpus_today, 1);

  // `jobctl report spend`: the CPU stretch has no on-demand equivalent and says so; the time
  // column says what it counts.
  PlacementApiServer api(h.store(), h.clock());
  ASSERT_FALSE(api.url.empty());
  auto spend = jobctl_cli(api.url, {"report", "spend", "--from", "2026-11-01", "--to", "2026-11-15", "--group-by", "job"});
  EXPECT_EQ(spend.code, 0) << spend.err;
  EXPECT_NE(spend.out.find("GPU/instance time"), std::string::npos) << spend.out;
  EXPECT_NE(spend.out.find("no on-demand equivalent"), std::string::npos) << spend.out;
  EXPECT_NE(spend.out.find("$0.045 ran with no on-demand equivalent (a CPU, or a GPU model no on-demand offer has)"),
            std::string::npos)
      << spend.out;
  api.server->stop();
}

// A period with no job of the model is a plan of no jobs (buy none); with no model named and no
// GPU job in the period there is none to plan for; an unknown model is an error.
TEST(FleetPlanHistory, AnEmptyPeriodIsAPlanOfNoJobsAndAnUnknownModelIsAnErrorNamingItsField) {
  History h;
  auto req = v100_request();
  req.from_ms = day0_ms() - 60 * kDayMs;
  req.to_ms = day0_ms() - 30 * kDayMs;
  auto empty = placement::fleet_plan(h.store(), {}, cost::seed_catalog(), req, h.clock().now_ms());
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(empty->job_count, 0);
  EXPECT_EQ(empty->cheapest_extra_gpus, 0);
  auto any_model = req;
  any_model.gpu.clear();
  auto none = placement::fleet_plan(h.store(), {}, cost::seed_catalog(), any_model, h.clock().now_ms());
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().field, "from");
  auto unknown = v100_request();
  unknown.gpu = "V1000X";
  auto u = placement::fleet_plan(h.store(), {}, cost::seed_catalog(), unknown, h.clock().now_ms());
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().field, "gpu");
  auto no_price = v100_request();
  no_price.purchase_usd.reset();
  auto p = placement::fleet_plan(h.store(), {}, cost::seed_catalog(), no_price, h.clock().now_ms());
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().field, "purchase_usd");
}

TEST(FleetPlanHistory, TheEndpointAnswersThePlanAndNamesBadParameters) {
  History h;
  PlacementApiServer api(h.store(), h.clock());
  ASSERT_FALSE(api.url.empty());
  client::HttpClient http(api.url);
  const std::string period =
      "from=" + std::to_string(day0_ms()) + "&to=" + std::to_string(day0_ms() + kDays * kDayMs);

  auto ok = http.request("GET", "/v1/reports/plan?" + period + "&gpu=V100&purchase_usd=2000&lifetime_years=3");
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200) << ok->body;
  const json plan = json::parse(ok->body);
  EXPECT_EQ(plan["gpu"], "V100-16GB");  // the canonical variant (cost/gpu_specs.h)
  EXPECT_EQ(plan["cheapest_extra_gpus"], 1);
  EXPECT_EQ(plan["assumptions"]["owned_gpus_today"], 1);
  EXPECT_TRUE(plan["rows"].is_array());

  auto field_of = [&](const std::string& query) {
    auto r = http.request("GET", "/v1/reports/plan?" + query);
    EXPECT_TRUE(r);
    EXPECT_EQ(r->status, 400) << query << ": " << r->body;
    return json::parse(r->body)["error"].value("field", "");
  };
  EXPECT_EQ(field_of("gpu=V100&purchase_usd=2000"), "from");
  EXPECT_EQ(field_of(period + "&gpu=V100&purchase_usd=-1"), "purchase_usd");
  EXPECT_EQ(field_of(period + "&gpu=V100&purchase_usd=abc"), "purchase_usd");
  EXPECT_EQ(field_of(period + "&gpu=V100&purchase_usd=2000&max_extra_gpus=999"), "max_extra_gpus");
  EXPECT_EQ(field_of(period + "&gpu=V100&purchase_usd=2000&utilisation=1.5"), "utilisation");
  EXPECT_EQ(field_of(period + "&gpu=V100&purchase_usd=2000&pue=0.5"), "pue");
  EXPECT_EQ(field_of(period + "&gpu=V1000X&purchase_usd=2000"), "gpu");
  EXPECT_EQ(field_of(period + "&gpu=V100&purchase_usd=2000&colour=red"), "colour");
  EXPECT_EQ(field_of("from=" + std::to_string(day0_ms()) + "&to=" + std::to_string(day0_ms() + 2 * kDayMs) +
                     "&gpu=V100&purchase_usd=2000"),
            "from");  // two days: too short a history
  EXPECT_EQ(field_of("from=" + std::to_string(day0_ms()) + "&to=" + std::to_string(day0_ms()) + "&gpu=V100&purchase_usd=2000"), "to");

  // `jobctl report plan` over the same daemon: the table with its assumptions, the chart file,
  // CSV, and the daemon's refusals said as the flag.
  jobctl::testing::TempDir out_dir;
  const std::string& server_url = api.url;
  const std::string svg = out_dir.file("plan.svg");
  auto table = jobctl_cli(server_url, {"report", "plan", "--from", "2026-11-01", "--to", "2026-11-15", "--gpu", "V100",
                                       "--purchase-usd", "2000", "--lifetime-years", "3", "--svg", svg});
  EXPECT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("cheapest: buy 1 (2 owned)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("assumptions: History: 35 V100-16GB jobs"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("V100-16GB fleet plan, 2026-11-01 00:00:00 to 2026-11-15 00:00:00 UTC (14.0 days): 35 jobs"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("$231.92 (+0.00%)"), std::string::npos) << table.out;
  std::ifstream chart(svg);
  std::stringstream chart_text;
  chart_text << chart.rdbuf();
  EXPECT_NE(chart_text.str().find("cheapest: N = 1"), std::string::npos);
  auto csv = jobctl_cli(server_url, {"report", "plan", "--from", "2026-11-01", "--to", "2026-11-15", "--gpu", "V100",
                                     "--purchase-usd", "2000", "-o", "csv"});
  EXPECT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 6) << csv.out;  // header + N = 0..4
  auto short_history = jobctl_cli(server_url, {"report", "plan", "--from", "2026-11-01", "--to", "2026-11-03",
                                               "--gpu", "V100", "--purchase-usd", "2000"});
  EXPECT_EQ(short_history.code, 2);
  EXPECT_NE(short_history.err.find("--from: the period is 48.0 h"), std::string::npos) << short_history.err;
  auto gpu = jobctl_cli(server_url, {"report", "plan", "--from", "2026-11-01", "--gpu", "Voodoo2", "--purchase-usd", "2000"});
  EXPECT_EQ(gpu.code, 2);
  EXPECT_NE(gpu.err.find("--gpu: unknown GPU model"), std::string::npos) << gpu.err;
  api.server->stop();
}

}  // namespace
}  // namespace jobctl::daemon::testing
