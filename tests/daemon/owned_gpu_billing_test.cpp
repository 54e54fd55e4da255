// Owned-GPU time in the ledger, billed per lease at the lease's own events (lease granted, lease
// ended), for the GPUs the job leased: short jobs, multi-GPU workers, every way a lease ends, a
// daemon restart in the middle of a lease, and the reports over open leases.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "daemon/http/api_json.h"
#include "daemon/ledger/job_segments.h"
#include "daemon/ledger/lease_ledger.h"
#include "daemon/ledger/ledger_report.h"
#include "tests/daemon/placement_support.h"

namespace jobctl::daemon::testing {
namespace {

// A job's ledger rows folded into segments: a 2-GPU lease's rows are one stretch of its worker;
// the instance it moved to after a gap is another; rows of one instance that follow each other
// are one.
TEST(JobSegments, OneSegmentPerMachineAndStretchWithTheOnDemandPriceBeside) {
  auto row = [](std::string resource, std::string kind, int64_t start, int64_t end, double usd, double od,
                bool open = false) {
    store::LedgerRecord r;
    r.resource = std::move(resource);
    r.kind = std::move(kind);
    r.start_ms = start;
    r.end_ms = end;
    r.billed_seconds = (end - start) / 1000;
    r.usd = usd;
    r.on_demand_usd = od;
    r.open = open;
    return r;
  };
  const auto cost = ledger::job_cost({row("instance:i-1", "on_demand", 0, 60'000, 0.05, 0.05),
                                      row("instance:i-1", "on_demand", 60'000, 120'000, 0.05, 0.05),
                                      row("local:3:gpu0", "local", 130'000, 190'000, 0.001, 0.05),
                                      row("local:3:gpu1", "local", 130'000, 190'000, 0.001, 0.05, true)});
  ASSERT_EQ(cost.segments.size(), 2u);
  EXPECT_EQ(cost.segments[0].where, "instance:i-1");
  EXPECT_EQ(cost.segments[0].kind, "on_demand");
  EXPECT_EQ(cost.segments[0].end_ms, 120'000);
  EXPECT_EQ(cost.segments[0].billed_seconds, 120);
  EXPECT_NEAR(cost.segments[0].usd, 0.10, 1e-12);
  EXPECT_EQ(cost.segments[1].where, "local:3");
  EXPECT_EQ(cost.segments[1].billed_seconds, 120) << "two GPUs for a minute";
  EXPECT_TRUE(cost.segments[1].open);
  EXPECT_NEAR(cost.usd, 0.102, 1e-12);
  EXPECT_NEAR(cost.on_demand_usd, 0.20, 1e-12);
  EXPECT_NEAR(cost.saved_usd(), 0.098, 1e-12);
  EXPECT_TRUE(ledger::job_cost({}).segments.empty());
}

using nlohmann::json;

constexpr double kCpuUsdPerHour = 0.15 * 0.15;  // a CPU at its board power (150 W) and $0.15/kWh
const std::string kV100 = "Tesla V100-SXM2-16GB";

// Billed seconds of a job in the ledger, and its rows.
struct Billed {
  std::vector<ledger::LedgerRow> rows;
  int64_t seconds = 0;
  double usd = 0;
};

Billed billed(PlacementFixture& f, int64_t job_id) {
  Billed b;
  auto rows = f.ledger->rows(0, f.clock.now_ms() + 1);
  EXPECT_TRUE(rows);
  if (!rows) return b;
  for (const auto& r : *rows) {
    if (r.entry.job_id != job_id) continue;
    b.rows.push_back(r);
    b.seconds += r.billed_seconds;
    b.usd += r.usd;
  }
  return b;
}

int64_t epoch_of(PlacementFixture& f, int64_t job) { return f.job(job).lease_epoch; }

void complete(PlacementFixture& f, int64_t job, int64_t worker) {
  auto r = f.svc->complete(job, jobs::CompletionReport{{worker, epoch_of(f, job)}, R"({"elapsed_s": 1})"});
  ASSERT_TRUE(r) << r.error().message;
}

// Two ~10 s CPU jobs left the ledger empty when owned time was sampled by a periodic pass over
// the leases active at that moment: a lease that began and ended between two passes was never
// billed. Now each is billed from its grant to its end, whatever runs in between.
TEST(OwnedGpuBilling, TwoShortJobsBillTheirSeconds) {
  PlacementFixture f;
  const int64_t w = f.add_worker({});
  const int64_t first = f.submit(mlp_spec());
  const int64_t second = f.submit(mlp_spec());
  ASSERT_EQ(f.lease(w), first);
  f.clock.advance_ms(10'000);
  complete(f, first, w);
  ASSERT_EQ(f.lease(w), second);
  f.clock.advance_ms(9'200);  // billed per started second: 10 s
  complete(f, second, w);

  for (int64_t job : {first, second}) {
    const Billed b = billed(f, job);
    ASSERT_EQ(b.rows.size(), 1u) << "job " << job;
    EXPECT_EQ(b.rows[0].entry.resource, "local:" + std::to_string(w) + ":cpu");
    EXPECT_EQ(b.rows[0].entry.kind, "local");
    EXPECT_FALSE(b.rows[0].entry.open);
    EXPECT_EQ(b.seconds, 10);
    EXPECT_NEAR(b.usd, 10 * kCpuUsdPerHour / 3600, 1e-12);
  }
  auto report = ledger::spend_report(*f.ledger, 0, f.clock.now_ms() + 1, "job");
  ASSERT_TRUE(report);
  EXPECT_EQ(report->groups.size(), 2u);
  EXPECT_NEAR(report->total.usd, 20 * kCpuUsdPerHour / 3600, 1e-12);
}

// A 1-GPU job on a 4 x V100 worker pays for one GPU, a 2-GPU job for two, at the owned V100's
// price per GPU-hour.
TEST(OwnedGpuBilling, AJobPaysForTheGpusItLeased) {
  placement::PlacementSettings settings;
  cost::LocalGpuInventory v100;
  v100.gpu_model = "V100";
  v100.count = 4;
  v100.purchase_usd = 8000;
  settings.local_gpus = {v100};
  PlacementFixture f(settings);
  const double per_gpu = f.billing->usd_per_gpu_hour("V100");
  ASSERT_GT(per_gpu, 0);
  const int64_t w = f.add_worker({{kV100, 16384}, {kV100, 16384}, {kV100, 16384}, {kV100, 16384}});
  const int64_t one = f.submit(mlp_spec(R"(,"resources":{"gpu":"V100","gpus":1})"));
  ASSERT_EQ(f.lease(w), one);
  f.clock.advance_ms(3'600'000);
  complete(f, one, w);
  const int64_t two = f.submit(mlp_spec(R"(,"resources":{"gpu":"V100","gpus":2})"));
  ASSERT_EQ(f.lease(w), two);
  f.clock.advance_ms(3'600'000);
  complete(f, two, w);

  const Billed b1 = billed(f, one);
  ASSERT_EQ(b1.rows.size(), 1u);
  EXPECT_EQ(b1.rows[0].entry.resource, "local:" + std::to_string(w) + ":gpu0");
  EXPECT_NEAR(b1.usd, per_gpu, 1e-9) << "one GPU for an hour, not the worker's four";
  const Billed b2 = billed(f, two);
  ASSERT_EQ(b2.rows.size(), 2u);
  std::set<std::string> resources;
  for (const auto& r : b2.rows) resources.insert(r.entry.resource);
  EXPECT_EQ(resources, (std::set<std::string>{"local:" + std::to_string(w) + ":gpu0",
                                              "local:" + std::to_string(w) + ":gpu1"}));
  EXPECT_NEAR(b2.usd, 2 * per_gpu, 1e-9);
}

// While a lease runs its rows are open: every read bills them up to now (the spend report and
// budgets see the cost so far). A daemon restart in the middle of the lease neither loses it
// (the open rows are in the database) nor bills it twice (the end closes the same rows).
TEST(OwnedGpuBilling, AnOpenLeaseIsBilledToNowAndARestartNeitherLosesNorDoublesIt) {
  jobctl::testing::TempDir shared;
  const std::string path = shared.file("jobctl.db");
  int64_t job = 0, worker = 0, epoch = 0, leased_at = 0;
  {
    PlacementFixture f({}, path);
    worker = f.add_worker({});
    job = f.submit(mlp_spec());
    ASSERT_EQ(f.lease(worker), job);
    leased_at = f.clock.now_ms();
    epoch = epoch_of(f, job);
    f.clock.advance_ms(30'000);
    const Billed so_far = billed(f, job);
    ASSERT_EQ(so_far.rows.size(), 1u);
    EXPECT_TRUE(so_far.rows[0].entry.open);
    EXPECT_EQ(so_far.rows[0].entry.end_ms, f.clock.now_ms()) << "an open row reads as ending now";
    EXPECT_EQ(so_far.seconds, 30);
    EXPECT_NEAR(*f.ledger->job_total_usd(job), 30 * kCpuUsdPerHour / 3600, 1e-12);
    auto report = ledger::spend_report(*f.ledger, 0, f.clock.now_ms(), "user");
    ASSERT_TRUE(report);
    EXPECT_NEAR(report->total.usd, 30 * kCpuUsdPerHour / 3600, 1e-12);
  }
  // The daemon restarts (same database, the clock goes on); the worker kept running the job.
  PlacementFixture g({}, path);
  g.clock.set_ms(leased_at + 30'000);
  g.clock.advance_ms(20'000);
  EXPECT_EQ(billed(g, job).seconds, 50) << "the open lease was not lost";
  auto r = g.svc->complete(job, jobs::CompletionReport{{worker, epoch}, R"({"elapsed_s": 50})"});
  ASSERT_TRUE(r) << r.error().message;
  g.clock.advance_ms(100'000);  // nothing accrues after the end
  const Billed b = billed(g, job);
  ASSERT_EQ(b.rows.size(), 1u) << "billed once";
  EXPECT_FALSE(b.rows[0].entry.open);
  EXPECT_EQ(b.rows[0].entry.start_ms, leased_at);
  EXPECT_EQ(b.seconds, 50);
}

// Every way a lease ends closes it at that moment: failure, cancellation, a worker giving the job
// back, lease expiry. A requeued job's next lease is billed anew.
TEST(OwnedGpuBilling, EveryEndOfALeaseClosesItAtThatMoment) {
  PlacementFixture f;
  const int64_t w = f.add_worker({});
  auto run_for = [&](int64_t seconds) {
    const int64_t job = f.submit(mlp_spec());
    EXPECT_EQ(f.lease(w), job);
    f.clock.advance_ms(seconds * 1000);
    return job;
  };
  const int64_t failed = run_for(3);
  ASSERT_TRUE(f.svc->fail(failed, jobs::FailureReport{{w, epoch_of(f, failed)}, "boom"}));
  const int64_t cancelled = run_for(4);
  ASSERT_TRUE(f.svc->cancel_job(cancelled));
  const int64_t given_back = run_for(5);
  ASSERT_TRUE(f.svc->preempt(given_back, jobs::PreemptionReport{{w, epoch_of(f, given_back)}, "spot notice"}));
  f.clock.advance_ms(1'000);
  EXPECT_EQ(billed(f, failed).seconds, 3);
  EXPECT_EQ(billed(f, cancelled).seconds, 4);
  EXPECT_EQ(billed(f, given_back).seconds, 5);

  // The given-back job is queued again: its next lease opens new rows, and expiry closes them.
  ASSERT_TRUE(f.placement->reevaluate());
  ASSERT_EQ(f.lease(w), given_back);
  f.clock.advance_ms(61'000);  // no heartbeat for longer than the lease timeout
  ASSERT_EQ(*f.svc->expire_leases(), 1);
  f.clock.advance_ms(30'000);
  const Billed b = billed(f, given_back);
  ASSERT_EQ(b.rows.size(), 2u);
  for (const auto& r : b.rows) EXPECT_FALSE(r.entry.open);
  EXPECT_EQ(b.seconds, 5 + 61);
}

// A cloud instance's worker is billed by the provisioner (instance time), not per lease.
TEST(OwnedGpuBilling, ACloudInstanceWorkerIsNotBilledHere) {
  placement::PlacementSettings s;
  s.cloud_provider = "sim";
  s.clouds = {"aws"};
  PlacementFixture f(s);
  const int64_t job = f.submit(mlp_spec(R"(,"resources":{"gpu":"V100"},"placement":{"spot":"never"})"));
  ASSERT_EQ(f.placement_of(job)["chosen"]["option"], "on_demand");
  const int64_t w = f.add_worker({{kV100, 16384}}, jobs::WorkerInstance{"i-1", "sim", "p3.2xlarge", false});
  ASSERT_EQ(f.lease(w), job);
  f.clock.advance_ms(60'000);
  complete(f, job, w);
  EXPECT_TRUE(billed(f, job).rows.empty());
}

// The lease ledger's own contract, on a store alone: a grant opens rows, an end closes them, and
// a new grant of the same job closes what an earlier lease left open at the new grant's time.
TEST(LeaseLedger, OpenCloseAndANewGrantClosesTheOldLease) {
  PlacementFixture f;
  const int64_t job = f.submit(mlp_spec());  // a job row for the rows to belong to
  auto write = [&f](std::function<Status(store::WriteTxn&)> change) { return f.db->write(std::move(change)); };
  const int64_t t0 = f.clock.now_ms();
  ASSERT_TRUE(write([&](store::WriteTxn& txn) {
    return ledger::open_lease_in(txn, ledger::OwnedLease{job, 7, t0, {0, 1}, 1.8, "alice"});
  }));
  f.clock.advance_ms(5'000);
  ASSERT_TRUE(write([&](store::WriteTxn& txn) {
    return ledger::open_lease_in(txn, ledger::OwnedLease{job, 8, t0 + 5'000, {}, 0.36, "alice"});
  }));
  f.clock.advance_ms(2'500);
  ASSERT_TRUE(write([&](store::WriteTxn& txn) -> Status {
    auto closed = ledger::close_lease_in(txn, job, t0 + 7'500);
    if (!closed) return closed.error();
    EXPECT_EQ(*closed, 1);
    return {};
  }));
  const Billed b = billed(f, job);
  ASSERT_EQ(b.rows.size(), 3u);
  for (const auto& r : b.rows) {
    EXPECT_FALSE(r.entry.open);
    EXPECT_EQ(r.entry.user, "alice");
    if (r.entry.resource == "local:8:cpu") {
      EXPECT_EQ(r.billed_seconds, 3);  // 2.5 s, per started second
    } else {
      EXPECT_TRUE(r.entry.resource == "local:7:gpu0" || r.entry.resource == "local:7:gpu1") << r.entry.resource;
      EXPECT_EQ(r.billed_seconds, 5);
      EXPECT_NEAR(r.usd, 5 * 1.8 / 3600, 1e-12);
    }
  }
  EXPECT_EQ(ledger::owned_resources(3, {}), std::vector<std::string>{"local:3:cpu"});
  EXPECT_EQ(ledger::owned_resources(3, {0, 1}), (std::vector<std::string>{"local:3:gpu0", "local:3:gpu1"}));
  EXPECT_EQ(ledger::owned_resources(3, {2}), (std::vector<std::string>{"local:3:gpu2"})) << "the GPU the lease took";
}

// The job list's cost so far (GET /v1/jobs "cost"): one query for the page, the same figures as
// the job's own segments give (open leases billed up to now), nothing for a job never billed.
TEST(LeaseLedger, TheJobListCarriesWhatEachJobCostSoFar) {
  PlacementFixture f;
  const int64_t billed_job = f.submit(mlp_spec());
  const int64_t unbilled_job = f.submit(mlp_spec());
  const int64_t t0 = f.clock.now_ms();
  ASSERT_TRUE(f.db->write([&](store::WriteTxn& txn) {
    return ledger::open_lease_in(txn, ledger::OwnedLease{billed_job, 7, t0, {0, 1}, 1.8, "alice"});
  }));
  f.clock.advance_ms(4'200);
  auto page = f.svc->list_jobs(jobs::JobListRequest{});
  ASSERT_TRUE(page) << page.error().message;
  ASSERT_EQ(page->jobs.size(), 2u);
  ASSERT_EQ(page->costs.count(billed_job), 1u);
  EXPECT_EQ(page->costs.count(unbilled_job), 0u);
  auto rows = f.db->ledger_rows_of_job(billed_job);
  ASSERT_TRUE(rows);
  const ledger::JobCost cost = ledger::job_cost(*rows);
  EXPECT_NEAR(page->costs[billed_job].usd, 2 * 5 * 1.8 / 3600, 1e-12) << "two GPUs, 4.2 s billed as 5";
  EXPECT_NEAR(page->costs[billed_job].usd, cost.usd, 1e-12);
  EXPECT_NEAR(page->costs[billed_job].on_demand_usd, cost.on_demand_usd, 1e-12);
}

// GET /v1/jobs/{id} "runtime": the chosen option's estimate against the actual hours.
TEST(OwnedGpuBilling, EstimatedAgainstActualRuntime) {
  PlacementFixture f;
  const int64_t w = f.add_worker({});
  const int64_t id = f.submit(mlp_spec());
  ASSERT_EQ(f.lease(w), id);
  f.clock.advance_ms(150'000);
  ASSERT_TRUE(f.svc->complete(id, jobs::CompletionReport{{w, epoch_of(f, id)}, R"({"elapsed_s": 150})"}));
  auto d = f.svc->get_job(id);
  ASSERT_TRUE(d);
  const json rt = http::runtime_json(d->job, d->events);
  EXPECT_NEAR(rt["actual_hours"].get<double>(), 150.0 / 3600, 1e-12);
  EXPECT_TRUE(rt["estimated_hours"].is_number());
  EXPECT_TRUE(rt["error_fraction"].is_number());
}

}  // namespace
}  // namespace jobctl::daemon::testing
