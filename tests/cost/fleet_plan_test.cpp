// The fleet plan's replay (cost/fleet_plan.h) on synthetic histories whose answers are worked out
// by hand below, at the seed facts' V100 figures (docs/cost-model.md): p3.2xlarge on demand at
// $3.06/h, a used V100 bought for $2,000.
#include <gtest/gtest.h>

#include "cost/fleet_plan.h"
#include "cost/fleet_plan_chart.h"

namespace jobctl::cost {
namespace {

constexpr int64_t kHourMs = 3'600'000;
constexpr int64_t kFrom = 1'764'547'200'000;  // 2025-12-01 00:00 UTC
constexpr double kOnDemand = 3.06;           // p3.2xlarge, seed facts

// The bought V100 of the cost model's worked quote: $2,000 over 3 years, 0.3 kW at $0.15/kWh, so
//   purchase per calendar hour = 2000 / (3 x 8760)      = $0.0761035 per GPU
//   energy per busy hour       = 0.3 x 0.15             = $0.045
//   placement's owned price    = 2000 / (3 x 8760 x 0.5) + 0.045 = $0.197207 per GPU-hour
FleetPlanInput v100_input(int days) {
  FleetPlanInput in;
  in.gpu_model = "V100";
  in.from_ms = kFrom;
  in.to_ms = kFrom + days * 24 * kHourMs;
  in.bought.purchase_usd = 2000;
  in.bought.lifetime_years = 3;
  in.bought.utilisation = 0.5;
  in.bought.power_kw = 0.3;
  in.bought.electricity_usd_per_kwh = 0.15;
  in.max_extra_gpus = 4;
  in.max_wait_hours = 1.0;
  return in;
}

PlanJob cloud_job(int64_t id, double arrival_hours, double runtime_hours, int gpus = 1) {
  PlanJob j;
  j.id = id;
  j.arrival_ms = kFrom + static_cast<int64_t>(arrival_hours * kHourMs);
  j.gpus = gpus;
  j.runtime_hours = runtime_hours;
  j.cloud_usd_per_gpu_hour = kOnDemand;
  j.paid_usd = gpus * runtime_hours * kOnDemand;
  return j;
}

// 30 days; every 4 h two 1-GPU jobs of 4 h arrive together, run in the cloud on demand.
FleetPlanInput steady_two_gpus() {
  FleetPlanInput in = v100_input(30);
  int64_t id = 0;
  for (int t = 0; t < 720; t += 4) {
    in.jobs.push_back(cloud_job(++id, t, 4));
    in.jobs.push_back(cloud_job(++id, t, 4));
  }
  return in;
}

TEST(FleetPlan, SteadyDemandOfTwoGpusAroundTheClockMakesOwningTwoCheapest) {
  // 30 days = 720 h. Every 4 h two 1-GPU jobs of 4 h arrive together: 180 pairs, 360 jobs,
  // 1,440 GPU-hours, two GPUs busy around the clock. Nothing owned today; no deadlines (a job
  // waits at most 1 h for an owned GPU).
  FleetPlanInput in = steady_two_gpus();
  auto plan = plan_fleet(in);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->rows.size(), 5u);
  // N = 0: all 1,440 GPU-hours on demand: 1440 x 3.06 = $4,406.40.
  EXPECT_NEAR(plan->rows[0].total_usd, 4406.40, 1e-6);
  EXPECT_EQ(plan->rows[0].jobs_cloud, 360);
  // N = 1: the GPU frees as each pair arrives; the first job of a pair takes it, the second would
  // wait 4 h (> 1 h) and goes on demand. Owned 720 h, cloud 720 h:
  //   cloud 720 x 3.06 = 2203.20; purchase 2000 x 720 / 26280 = 54.794521; power 720 x 0.045 = 32.40
  //   total 2290.394521
  EXPECT_NEAR(plan->rows[1].cloud_usd, 2203.20, 1e-6);
  EXPECT_NEAR(plan->rows[1].purchase_usd, 54.794521, 1e-5);
  EXPECT_NEAR(plan->rows[1].power_usd, 32.40, 1e-6);
  EXPECT_NEAR(plan->rows[1].total_usd, 2290.394521, 1e-5);
  EXPECT_NEAR(plan->rows[1].utilisation, 1.0, 1e-9);
  EXPECT_EQ(plan->rows[1].jobs_waited, 0);
  // N = 2: everything owned: purchase 2 x 54.794521 = 109.589041, power 1440 x 0.045 = 64.80,
  //   total 174.389041.
  EXPECT_NEAR(plan->rows[2].total_usd, 174.389041, 1e-5);
  EXPECT_EQ(plan->rows[2].jobs_cloud, 0);
  EXPECT_NEAR(plan->rows[2].utilisation, 1.0, 1e-9);
  // N = 3: a third GPU idles and its purchase still counts: 3 x 54.794521 + 64.80 = 229.183562.
  EXPECT_NEAR(plan->rows[3].total_usd, 229.183562, 1e-5);
  EXPECT_NEAR(plan->rows[3].utilisation, 2.0 / 3.0, 1e-9);
  EXPECT_EQ(plan->cheapest_extra_gpus, 2);
  // Saving against today: 4406.40 - 174.389041 = 4232.010959.
  EXPECT_NEAR(plan->saving_usd, 4232.010959, 1e-5);
  // Payback: 720 h = 720 / 730 months; monthly saving before the purchase
  //   (4406.40 - 64.80) / (720 / 730) = 4401.8999...; payback = 2 x 2000 / 4401.90 = 0.908699 months.
  ASSERT_TRUE(plan->payback_months);
  EXPECT_NEAR(*plan->payback_months, 4000.0 / (4341.60 * 730.0 / 720.0), 1e-9);
  EXPECT_NEAR(*plan->payback_months, 0.908699, 1e-5);
  // Demand: 1,440 GPU-hours, 2 GPUs at the peak, 48 GPU-hours a day, 60 in every hour of the day.
  EXPECT_NEAR(plan->demand_gpu_hours, 1440, 1e-9);
  EXPECT_NEAR(plan->peak_concurrent_gpus, 2, 1e-9);
  ASSERT_EQ(plan->demand_by_day.size(), 30u);
  EXPECT_NEAR(plan->demand_by_day[17], 48, 1e-9);
  ASSERT_EQ(plan->demand_by_hour_of_day.size(), 24u);
  EXPECT_NEAR(plan->demand_by_hour_of_day[5], 60, 1e-9);
}

TEST(FleetPlan, AShortBurstMakesOwningNoneCheapest) {
  // One burst in 30 days: eight 1-GPU jobs of 6 h arrive together on day 10.
  //   N = 0: 48 GPU-hours on demand = 48 x 3.06 = $146.88.
  //   N = 1: one job owned (6 h), seven would wait 6 h, on demand: 42 x 3.06 = 128.52;
  //          purchase 54.794521 (30 days, idle or not); power 6 x 0.045 = 0.27; total 183.584521.
  //   N = 2: 36 x 3.06 = 110.16 + 2 x 54.794521 + 12 x 0.045 = 220.289041.
  // Owning none is cheapest; there is no payback.
  FleetPlanInput in = v100_input(30);
  for (int i = 1; i <= 8; ++i) in.jobs.push_back(cloud_job(i, 240, 6));
  auto plan = plan_fleet(in);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_NEAR(plan->rows[0].total_usd, 146.88, 1e-6);
  EXPECT_NEAR(plan->rows[1].total_usd, 183.584521, 1e-5);
  EXPECT_NEAR(plan->rows[2].total_usd, 220.289041, 1e-5);
  EXPECT_EQ(plan->cheapest_extra_gpus, 0);
  EXPECT_NEAR(plan->saving_usd, 0, 1e-9);
  EXPECT_FALSE(plan->payback_months);
  EXPECT_NEAR(plan->peak_concurrent_gpus, 8, 1e-9);
}

TEST(FleetPlan, TodaysFleetAtNoneBoughtIsPricedAsTheLedgerBilledIt) {
  // One owned V100 today at $0.20/GPU-hour. Two jobs: job 1 (3 h) ran owned and paid 0.60; job 2
  // (2 h, arriving while job 1 runs) ran on demand and paid 6.12. Idle instance time not replayed:
  // $1.00. The ledger's total: 0.60 + 6.12 + 1.00 = 7.72, and N = 0 replays it exactly.
  FleetPlanInput in = v100_input(7);
  in.owned_gpus_today = 1;
  in.owned_usd_per_gpu_hour_today = 0.20;
  in.other_usd = 1.00;
  in.ledger_usd = 7.72;
  PlanJob owned = cloud_job(1, 10, 3);
  owned.ran_owned = true;
  owned.paid_usd = 0.60;
  in.jobs.push_back(owned);
  in.jobs.push_back(cloud_job(2, 11, 2));
  auto plan = plan_fleet(in);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_NEAR(plan->rows[0].fleet_usd, 0.60, 1e-9);
  EXPECT_NEAR(plan->rows[0].cloud_usd, 6.12, 1e-9);
  EXPECT_NEAR(plan->rows[0].total_usd, 7.72, 1e-9);
  EXPECT_NEAR(plan->replay_vs_ledger, 0, 1e-12);
  // Job 2 would wait 2 h for the owned GPU (> 1 h): on demand.
  EXPECT_EQ(plan->rows[0].jobs_cloud, 1);
}

TEST(FleetPlan, AJobWithADeadlineWaitsWhenWaitingIsCheaperAndInTime) {
  // One bought V100. Two 1-GPU jobs of 2 h arrive together with a 5 h deadline: the second waits
  // 2 h for the GPU (finishes at 4 h <= 5 h) at $0.197207/h rather than $3.06/h on demand.
  // A third, 3 h long with a 2 h deadline, can meet it nowhere: placed where it finishes first,
  // both at 3 h, so the cheaper (the idle owned GPU); one deadline missed. With none bought it
  // runs on demand, missed as well.
  FleetPlanInput in = v100_input(7);
  in.max_extra_gpus = 1;
  for (int i = 1; i <= 2; ++i) {
    PlanJob j = cloud_job(i, 24, 2);
    j.deadline_ms = j.arrival_ms + 5 * kHourMs;
    in.jobs.push_back(j);
  }
  PlanJob late = cloud_job(3, 48, 3);
  late.deadline_ms = late.arrival_ms + 2 * kHourMs;
  in.jobs.push_back(late);
  auto plan = plan_fleet(in);
  ASSERT_TRUE(plan) << plan.error().message;
  const FleetPlanRow& one = plan->rows[1];
  EXPECT_EQ(one.jobs_owned, 3);
  EXPECT_EQ(one.jobs_waited, 1);
  EXPECT_NEAR(one.wait_hours_max, 2, 1e-9);
  EXPECT_EQ(one.deadlines_missed, 1);
  EXPECT_NEAR(one.cloud_usd, 0, 1e-9);
  EXPECT_EQ(plan->rows[0].deadlines_missed, 1);
  EXPECT_NEAR(plan->rows[0].cloud_usd, 7 * kOnDemand, 1e-9);
}

// No job of the model is an answer (buy none: purchases and power with no demand to serve);
// a history shorter than a week is an error.
TEST(FleetPlan, AnEmptyHistoryBuysNoneAndAShortOneIsAnErrorThatSaysSo) {
  FleetPlanInput empty = v100_input(30);
  auto e = plan_fleet(empty);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->job_count, 0);
  EXPECT_EQ(e->cheapest_extra_gpus, 0);
  EXPECT_DOUBLE_EQ(e->demand_gpu_hours, 0);
  EXPECT_FALSE(e->payback_months);
  ASSERT_GE(e->rows.size(), 2u);
  EXPECT_GT(e->rows[1].total_usd, e->rows[0].total_usd) << "a bought GPU only adds its cost";

  FleetPlanInput short_history = v100_input(3);
  short_history.jobs.push_back(cloud_job(1, 1, 1));
  auto s = plan_fleet(short_history);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().field, "from");
  EXPECT_NE(s.error().message.find("at least 168 h"), std::string::npos) << s.error().message;
}

TEST(FleetPlan, OutOfRangeInputsNameTheirField) {
  FleetPlanInput in = v100_input(30);
  in.jobs.push_back(cloud_job(1, 1, 1));
  auto field_of = [](FleetPlanInput x) {
    auto r = plan_fleet(x);
    return r ? std::string("ok") : r.error().field;
  };
  EXPECT_EQ(field_of(in), "ok");
  { auto x = in; x.max_extra_gpus = kMaxPlanExtraGpus + 1; EXPECT_EQ(field_of(x), "max_extra_gpus"); }
  { auto x = in; x.max_extra_gpus = -1; EXPECT_EQ(field_of(x), "max_extra_gpus"); }
  { auto x = in; x.max_wait_hours = -1; EXPECT_EQ(field_of(x), "max_wait_hours"); }
  { auto x = in; x.to_ms = x.from_ms; EXPECT_EQ(field_of(x), "to"); }
  { auto x = in; x.bought.purchase_usd = -5; EXPECT_EQ(field_of(x), "purchase_usd"); }
  { auto x = in; x.bought.lifetime_years = 0; EXPECT_EQ(field_of(x), "lifetime_years"); }
  { auto x = in; x.bought.pue = 0.5; EXPECT_EQ(field_of(x), "pue"); }
}

TEST(FleetPlan, JsonRoundTripsAndTheChartMarksTodayAndTheCheapest) {
  FleetPlanInput in = steady_two_gpus();
  auto plan = plan_fleet(in);
  ASSERT_TRUE(plan);
  auto back = fleet_plan_from_json(to_json(*plan));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->cheapest_extra_gpus, 2);
  EXPECT_EQ(back->rows.size(), plan->rows.size());
  EXPECT_NEAR(back->rows[2].total_usd, plan->rows[2].total_usd, 1e-9);
  EXPECT_EQ(to_json(*back)["rows"], to_json(*plan)["rows"]);
  const std::string csv = fleet_plan_csv(*plan);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6);  // header + N = 0..4
  EXPECT_NE(csv.find("V100,2,2,174.3890"), std::string::npos) << csv;
  const std::string svg = fleet_plan_svg(*plan);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '<'), std::count(svg.begin(), svg.end(), '>'));
  EXPECT_NE(svg.find("fleet $4406"), std::string::npos);
  EXPECT_NE(svg.find("cheapest: N = 2, $174"), std::string::npos);
  EXPECT_NE(fleet_plan_assumptions(*plan).find("waits at most 1.00 h"), std::string::npos);
}

}  // namespace
}  // namespace jobctl::cost
