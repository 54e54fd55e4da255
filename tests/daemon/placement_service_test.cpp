// Placement inside the daemon, driven without sockets: constructed scenarios against the
// built-in catalog, matching that honours the choice, quote == placement, the ledger and the spend
// report, calibration persisted across a restart, placement woken by a worker that registers or
// comes back, and failed passes logged.
#include <gtest/gtest.h>

#include <cmath>
#include <future>
#include <map>

#include "cost/runtime_estimate.h"
#include "cost/workload.h"
#include "daemon/http/api_json.h"
#include "daemon/ledger/ledger_report.h"
#include "daemon/placement/placement_matcher.h"
#include "daemon/placement/placement_service.h"
#include "daemon/placement/start_board.h"
#include "scheduler/price_jump.h"
#include "tests/daemon/placement_support.h"
#include "train/spec/model_stats.h"

namespace jobctl::daemon::testing {
namespace {

using nlohmann::json;
using ledger::LedgerEntry;
using placement::PlacementSettings;

placement::PlacementSettings cloud_settings() {
  placement::PlacementSettings s;
  s.cloud_provider = "sim";
  s.clouds = {"aws"};
  s.spot_interruptions_per_hour = 0.1;  // the one rate these scenarios' figures were worked out with
  return s;
}

std::string spec(const std::string& extra) { return mlp_spec(extra); }

// A V100 job of hours, long enough for a move to pay, with these placement fields.
std::string hours_long_v100_job(const std::string& placement) {
  return R"({"model":{"kind":"mlp","hidden":[4096,4096]},"data":{"dataset":"synthetic","samples":1000000,)"
         R"("features":784,"classes":10},"train":{"epochs":20},"resources":{"gpu":"V100"},"placement":)" +
         placement + "}";
}

// hours_long_v100_job(placement), placed on demand while no spot offer can be launched (every one
// is set aside for ten minutes), leased to an on-demand p3.2xlarge instance; beat() reports 1% done (or `step` of 1000).
// A job with a deadline first waits for spot (its policy, Uniform Progress, is on its line at the
// start): it goes on demand once a minute has put it behind the line.
struct OnDemandWhileSpotIsSetAside {
  static constexpr int64_t kSetAsideMs = 600'000;
  PlacementFixture* f = nullptr;
  int64_t id = 0, instance = 0, epoch = 0;

  Expected<jobs::HeartbeatReply> beat(int64_t step = 10) const {
    jobs::HeartbeatReport hb;
    hb.lease = {instance, epoch};
    hb.progress_json = json{{"step", step}, {"total_steps", 1000}}.dump();
    return f->svc->heartbeat(id, hb);
  }
};

void start_on_demand_while_spot_is_set_aside(PlacementFixture& f, const std::string& placement,
                                             OnDemandWhileSpotIsSetAside& out) {
  out.f = &f;
  const int64_t until = f.clock.steady_ms() + OnDemandWhileSpotIsSetAside::kSetAsideMs;  // steady clock
  for (const auto& o : f.placement->offers())
    if (o.spot_usd_per_hour) f.placement->set_aside(o.instance_type, o.region, true, until);
  out.id = f.submit(hours_long_v100_job(placement));
  if (placement.find("deadline_hours") != std::string::npos) {
    const json waiting = f.placement_of(out.id);
    ASSERT_EQ(waiting["outcome"], "wait_spot") << waiting.dump(2);
    EXPECT_TRUE(waiting["chosen"].is_null());
    EXPECT_EQ(waiting["deadline_policy"]["decision"], "none") << waiting.dump(2);
    EXPECT_EQ(waiting["reason"].get<std::string>().rfind("waiting for spot capacity", 0), 0u) << waiting.dump(2);
    EXPECT_EQ(f.job(out.id).state, store::JobState::queued);
    f.clock.advance_ms(60'000);
    ASSERT_TRUE(f.placement->reevaluate());
  }
  ASSERT_EQ(f.placement_of(out.id)["chosen"]["option"], "on_demand") << f.placement_of(out.id).dump(2);
  ASSERT_GT(f.placement_of(out.id)["chosen"]["estimated_hours"].get<double>(), 0.5);
  out.instance =
      f.add_worker({{"Tesla V100-SXM2-16GB", 16384}}, jobs::WorkerInstance{"i-1", "sim", "p3.2xlarge", false});
  ASSERT_EQ(f.lease(out.instance), out.id);
  out.epoch = f.job(out.id).lease_epoch;
  ASSERT_TRUE(out.beat());
}

// Spot offers are priced with their own interruption rate from the real traces unless one rate is
// configured, and every spot row says which rate it was priced with.
TEST(PlacementService, SpotRowsCarryTheInterruptionRateTheyWerePricedWith) {
  auto rates_of = [](const placement::PlacementSettings& settings) {
    PlacementFixture f(settings);
    auto q = f.placement->quote(hours_long_v100_job("{}"));
    EXPECT_TRUE(q);
    std::map<std::string, double> rates;  // "region instance type" -> rate
    for (const auto& c : (*q)["candidates"])
      if (c["option"] == "spot" && c.contains("interruptions_per_hour"))
        rates[c["region"].get<std::string>() + " " + c["instance_type"].get<std::string>()] =
            c["interruptions_per_hour"].get<double>();
      else
        EXPECT_FALSE(c.contains("interruptions_per_hour")) << c.dump();
    return rates;
  };
  placement::PlacementSettings traces = cloud_settings();
  traces.spot_interruptions_per_hour.reset();
  const auto from_traces = rates_of(traces);
  ASSERT_TRUE(from_traces.contains("us-east-1 p3.2xlarge"));
  // 101 interruptions in 160.8 available hours over the two us-east-1 traces (docs/cost-model.md).
  EXPECT_NEAR(from_traces.at("us-east-1 p3.2xlarge"), 0.628, 0.0005);
  const auto configured = rates_of(cloud_settings());
  ASSERT_FALSE(configured.empty());
  for (const auto& [offer, rate] : configured) EXPECT_DOUBLE_EQ(rate, 0.1) << offer;
}

TEST(PlacementService, DefaultJobGoesToTheLocalCpuWorkerWithNoConfiguration) {
  PlacementFixture f;
  const int64_t w = f.add_worker({});
  const int64_t id = f.submit(spec(""));
  EXPECT_EQ(f.job(id).state, store::JobState::placed);
  json p = f.placement_of(id);
  ASSERT_TRUE(p["chosen"].is_object()) << p.dump(2);
  EXPECT_EQ(p["chosen"]["option"], "local");
  EXPECT_EQ(p["chosen"]["gpu"], "cpu");
  EXPECT_EQ(p["chosen"]["provider"], "local");
  // Priced at the CPU's board power (150 W) at the default $0.15/kWh.
  EXPECT_NEAR(p["chosen"]["usd_per_hour"].get<double>(), 0.15 * 0.15, 1e-9);
  EXPECT_FALSE(p["reason"].get<std::string>().empty());
  // Cloud rows are shown but rejected: no provider.
  bool saw_no_provider = false;
  for (const auto& c : p["candidates"]) saw_no_provider |= c.value("rejection", "") == "no_provider";
  EXPECT_TRUE(saw_no_provider);
  auto detail = f.svc->get_job(id);
  ASSERT_TRUE(detail);
  bool placed_event = false;
  for (const auto& ev : detail->events) placed_event |= ev.type == "placed";
  EXPECT_TRUE(placed_event);
  EXPECT_EQ(f.lease(w), id);
}

// A CPU-only worker that says what its CPU is (model, cores, vector width) is a pool of its own,
// named by the machine's key and timed at its own peak, and the job placed there is offered to
// that machine, not to a CPU of another model.
TEST(PlacementService, ACpuMachineIsAPoolOfItsOwnTimedAtItsPeak) {
  PlacementFixture f;
  auto register_cpu = [&f](std::string model, std::string vendor, int cores, int bits) {
    jobs::WorkerRegistration reg;
    reg.name = model;
    reg.capabilities.cpu_cores = cores;
    reg.capabilities.memory_mb = 16384;
    reg.capabilities.cpu = cost::CpuFacts{model, vendor, cores, bits, true, 2600, 0};
    auto r = f.svc->register_worker(reg);
    EXPECT_TRUE(r);
    return r ? r->worker_id : 0;
  };
  const int64_t epyc = register_cpu("AMD EPYC 9B14", "AuthenticAMD", 2, 512);
  const int64_t id = f.submit(spec(R"(,"resources": {"gpu": "cpu"})"));
  json p = f.placement_of(id);
  ASSERT_TRUE(p["chosen"].is_object()) << p.dump(2);
  EXPECT_EQ(p["chosen"]["gpu"], "cpu/AMD EPYC 9B14/2");
  // 2 cores x 2.6 GHz x 8 lanes (AVX-512 on AMD: 256-bit pipes) x FMA x 2 pipes = 0.1664 TFLOP/s.
  auto job_spec = train::parse_job_spec(f.job(id).spec_json);
  ASSERT_TRUE(job_spec);
  const double flops = cost::workload_from_spec(*job_spec, train::model_stats(*job_spec)).training_flops;
  EXPECT_NEAR(p["chosen"]["estimated_hours"].get<double>(),
              flops / (0.1664e12 * cost::default_efficiency("cpu", "mlp") * 3600), 1e-9);
  const int64_t xeon = register_cpu("Intel Xeon Platinum 8480", "GenuineIntel", 8, 512);
  EXPECT_EQ(f.lease(xeon), std::nullopt) << "placed on the EPYC machine: not another CPU's";
  EXPECT_EQ(f.lease(epyc), id);
}

// A worker that registers and never polls held a "gpu: any" job placed on its pool for over six
// minutes while a real CPU worker idled: it is lost after the lease timeout, the job is unplaced
// with the reason, and placed again where a live worker takes it.
TEST(PlacementService, APhantomWorkerLeavesPlacementAndItsJobIsPlacedAgain) {
  PlacementFixture f;
  f.add_worker({{"NVIDIA GeForce RTX 4090", 24564}});  // registers, never asks for work
  const int64_t cpu = f.add_worker({});
  const int64_t id = f.submit(spec(""));
  ASSERT_EQ(f.job(id).state, store::JobState::placed);
  EXPECT_EQ(f.placement_of(id)["chosen"]["gpu"], "RTX4090");
  EXPECT_FALSE(f.lease(cpu));  // placed on the other pool
  f.clock.advance_ms(61'000);  // the lease timeout (60 s) has passed
  EXPECT_FALSE(f.lease(cpu));  // the CPU worker is alive: it asks
  EXPECT_EQ(*f.svc->mark_silent_workers_lost(), 1);
  EXPECT_EQ(*f.svc->unplace_unclaimed(), 1);
  auto detail = f.svc->get_job(id);
  ASSERT_TRUE(detail);
  ASSERT_EQ(detail->events.back().type, "unplaced");
  EXPECT_NE(detail->events.back().detail_json.find("no worker of the local pool RTX4090 x1 took it within 61 s"),
            std::string::npos)
      << detail->events.back().detail_json;
  ASSERT_TRUE(f.placement->reevaluate());
  ASSERT_EQ(f.job(id).state, store::JobState::placed);
  EXPECT_EQ(f.placement_of(id)["chosen"]["gpu"], "cpu");
  EXPECT_EQ(f.lease(cpu), id);
}

// resources.gpus "auto": placement chooses per option the smallest count that holds the workload,
// the job's row takes the count of the option it is placed on and the lease gives the worker that
// many GPUs; placed again elsewhere (its first worker lost), the count is chosen again.
TEST(PlacementService, AnAutoJobTakesTheGpuCountChosenToFitAndIsSizedAgainWhenPlacedAgain) {
  PlacementFixture f;
  const std::vector<jobs::GpuDevice> h100s(8, jobs::GpuDevice{"NVIDIA H100 80GB HBM3", 81559});
  const std::vector<jobs::GpuDevice> a100s(8, jobs::GpuDevice{"NVIDIA A100-SXM4-40GB", 40960});
  f.add_worker(h100s, {}, /*commands=*/true);  // registers, never asks for work
  const int64_t a100 = f.add_worker(a100s, {}, /*commands=*/true);
  // A 7B full fine-tune (bf16, AdamW, seq 2048, selective recomputation, ZeRO-3).
  const int64_t id = f.submit(R"({"name": "ft7b", "command": ["python3", "finetune.py"],
    "resources": {"gpu": "any", "gpus": "auto"}, "placement": {"mode": "local"},
    "estimate": {"model": {"layers": 32, "hidden": 4096, "heads": 32, "vocab": 32000, "seq_len": 2048,
      "tokens": 1000000, "precision": "bf16", "optimizer": "adamw", "recompute": "selective", "zero_stage": 3}}})");
  ASSERT_EQ(f.job(id).state, store::JobState::placed) << f.placement_of(id).dump(2);
  // Two H100s hold it (65.9 GiB each), four A100 40 GB do: the H100s draw less and finish sooner.
  json p = f.placement_of(id);
  EXPECT_EQ(p["chosen"]["gpu"], "H100-SXM") << p.dump(2);
  EXPECT_EQ(p["chosen"]["job_gpus"], 2) << p.dump(2);
  EXPECT_EQ(f.job(id).resource_gpus, 2);
  ASSERT_TRUE(f.job(id).chosen);
  EXPECT_EQ(f.job(id).chosen->job_gpus, 2);
  for (const auto& c : p["candidates"])
    if (c["option"] == "local" && c["gpu"] == "A100-40GB-SXM") EXPECT_EQ(c["job_gpus"], 4) << c.dump();
  EXPECT_FALSE(f.lease_grant(a100));  // placed on the H100 pool

  // The H100 machine is lost; placed again on the A100s, the job takes four of them.
  f.clock.advance_ms(61'000);
  EXPECT_FALSE(f.lease_grant(a100));
  EXPECT_EQ(*f.svc->mark_silent_workers_lost(), 1);
  EXPECT_EQ(*f.svc->unplace_unclaimed(), 1);
  ASSERT_TRUE(f.placement->reevaluate());
  ASSERT_EQ(f.job(id).state, store::JobState::placed);
  p = f.placement_of(id);
  EXPECT_EQ(p["chosen"]["job_gpus"], 4) << p.dump(2);
  EXPECT_EQ(f.job(id).resource_gpus, 4);
  auto grant = f.lease_grant(a100);
  ASSERT_TRUE(grant);
  EXPECT_EQ(grant->job_id, id);
  EXPECT_EQ(grant->gpus, (std::vector<int>{0, 1, 2, 3}));
  // What the job's record and its lease event say.
  auto detail = f.svc->get_job(id);
  ASSERT_TRUE(detail);
  EXPECT_EQ(detail->job.resource_gpus, 4);
  EXPECT_EQ(json::parse(detail->events.back().detail_json)["gpus"], json::array({0, 1, 2, 3}))
      << detail->events.back().detail_json;
}

TEST(PlacementService, UnplaceableJobsStayQueuedWithTheReason) {
  PlacementFixture f;
  f.add_worker({});
  const int64_t cloud = f.submit(spec(R"(,"placement":{"mode":"cloud"})"));
  const int64_t h100 = f.submit(spec(R"(,"resources":{"gpu":"H100"})"));
  for (int64_t id : {cloud, h100}) {
    EXPECT_EQ(f.job(id).state, store::JobState::queued);
    json p = f.placement_of(id);
    EXPECT_TRUE(p["chosen"].is_null());
    EXPECT_NE(p["reason"].get<std::string>().find("no option can run this job"), std::string::npos) << p["reason"];
  }
  EXPECT_NE(f.placement_of(cloud)["reason"].get<std::string>().find("no_provider"), std::string::npos);
  EXPECT_NE(f.placement_of(h100)["reason"].get<std::string>().find("gpu_constraint"), std::string::npos);
  auto detail = f.svc->get_job(cloud);
  ASSERT_TRUE(detail);
  EXPECT_EQ(detail->events.back().type, "unplaceable");
  // Re-evaluating with nothing new neither places it nor repeats the event.
  const size_t events = detail->events.size();
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(f.svc->get_job(cloud)->events.size(), events);
}

// Passes leave out jobs found unplaceable under the same workers and offers without reading them:
// a job that left the queue meanwhile (cancelled) is not decided again, and the others are placed
// as soon as a worker that fits registers.
TEST(PlacementService, JobsLeftOutAsUnplaceableArePlacedWhenAWorkerFitsAndCancelledOnesStayCancelled) {
  PlacementFixture f;
  f.add_worker({});
  const std::string h100_spec = spec(R"(,"resources":{"gpu":"H100"})");
  const int64_t waiting = f.submit(h100_spec), pruned = f.submit(h100_spec), stale = f.submit(h100_spec);
  for (int64_t id : {waiting, pruned, stale}) ASSERT_EQ(f.job(id).state, store::JobState::queued);
  ASSERT_TRUE(f.placement->reevaluate());  // nothing changed: every job left out
  const size_t events = f.svc->get_job(waiting)->events.size();
  ASSERT_TRUE(f.svc->cancel_job(pruned));
  ASSERT_TRUE(f.placement->reevaluate());  // forgets the job that left the queue
  ASSERT_TRUE(f.svc->cancel_job(stale));   // left the queue after the last pass
  EXPECT_EQ(f.svc->get_job(waiting)->events.size(), events) << "left out: no decision, no event";
  const int64_t h100 = f.add_worker({{"NVIDIA H100 80GB HBM3", 81559}});
  f.placement->tick();  // the worker's hook may have asked for the unplaceable jobs again
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(f.job(waiting).state, store::JobState::placed);
  EXPECT_EQ(f.placement_of(waiting)["chosen"]["option"], "local");
  EXPECT_EQ(f.job(pruned).state, store::JobState::cancelled);
  EXPECT_EQ(f.job(stale).state, store::JobState::cancelled);
  EXPECT_EQ(f.lease(h100), waiting);
  EXPECT_EQ(f.lease(h100), std::nullopt);
}

// A gang is unplaceable on a pool with fewer workers than its nodes. What placement's skipping of
// unplaceable jobs depends on includes each pool's worker count: a worker of the pool that comes
// back (same pool kind, one more worker) has the gang tried again and placed.
TEST(PlacementService, AGangLeftUnplaceableIsPlacedWhenItsPoolGrowsToItsNodes) {
  PlacementFixture f;
  const int64_t first = f.add_worker({}, {}, /*commands=*/true);
  const int64_t second = f.add_worker({}, {}, /*commands=*/true);
  f.clock.advance_ms(61'000);
  ASSERT_EQ(f.lease(first), std::nullopt);  // heard from: active
  ASSERT_EQ(*f.svc->mark_silent_workers_lost(), 1);  // the second is silent: lost
  const int64_t gang = f.submit(R"({"command":["python3","train_ddp.py"],"resources":{"gpu":"cpu","nodes":2}})");
  ASSERT_EQ(f.job(gang).state, store::JobState::queued);
  EXPECT_NE(f.placement_of(gang)["reason"].get<std::string>().find("too_few_machines"), std::string::npos)
      << f.placement_of(gang).dump();
  f.placement->tick();  // the submit's own request, if its hook came late: decided, still unplaceable
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(f.job(gang).state, store::JobState::queued);

  EXPECT_EQ(f.lease(second), std::nullopt);  // it asks again: back in the pool
  ASSERT_TRUE(f.db->write([](store::WriteTxn&) { return Status{}; }));  // its return has committed
  f.placement->tick();
  EXPECT_EQ(f.job(gang).state, store::JobState::placed);
  EXPECT_EQ(f.placement_of(gang)["chosen"]["option"], "local");
}

// With no worker, queued jobs nothing can run are decided once while nothing they could use
// changes: a pass within placement's first reevaluate_s after start (the fleet not seen yet)
// leaves them out, the first pass after it decides one job of their kind again (and writes every
// job's held `unplaceable` event), later passes decide none (each stored decision keeps its
// decided_ms); a worker they can use has them decided and placed.
TEST(PlacementService, AnUnplaceableJobIsNotDecidedAgainWhileNothingItCouldUseChanges) {
  PlacementFixture f;  // started now: placement.reevaluate_s is 10 s
  const std::string h100 = spec(R"(,"resources":{"gpu":"H100"})");
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(f.submit(h100));
  f.placement->tick();  // what the submits' hooks asked for, decided by submit(): drained here
  std::atomic<int> decisions{0};
  f.placement->set_decision_observer([&decisions](double) { ++decisions; });
  const int64_t first_decided = f.placement_of(ids.front())["decided_ms"];
  const int64_t last_decided = f.placement_of(ids.back())["decided_ms"];
  auto unplaceable_events = [&f](int64_t id) {
    int n = 0;
    const auto detail = f.svc->get_job(id);
    if (detail)
      for (const auto& e : detail->events) n += e.type == "unplaceable";
    return n;
  };
  f.clock.advance_ms(5'000);
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(decisions, 0) << "within the grace, nothing changed: no job decided";
  f.clock.advance_ms(5'000);  // the grace is over: the fleet (none) is seen
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(decisions, 1) << "one decision for the kind";
  for (int64_t id : ids) EXPECT_EQ(unplaceable_events(id), 1) << "job " << id;
  for (int pass = 0; pass < 3; ++pass) {
    f.clock.advance_ms(10'000);
    ASSERT_TRUE(f.placement->reevaluate());
    f.placement->tick();
  }
  EXPECT_EQ(decisions, 1) << "nothing changed: no job decided";
  EXPECT_EQ(f.placement_of(ids.back())["decided_ms"], last_decided) << "its decision is the one of its submit";
  EXPECT_EQ(f.placement_of(ids.front())["decided_ms"], first_decided + 10'000) << "decided again once, after the grace";
  for (int64_t id : ids) EXPECT_EQ(unplaceable_events(id), 1) << "job " << id;
  // Something they can use: an H100 registers.
  f.add_worker({{"NVIDIA H100 80GB HBM3", 81559}});
  f.placement->tick();
  ASSERT_TRUE(f.placement->reevaluate());
  for (int64_t id : ids) EXPECT_EQ(f.job(id).state, store::JobState::placed) << "job " << id;
}

// Queued jobs nothing can run are indexed by what they need: a worker that fits none of a kind of
// job costs one decision for the kind, not one per job; a worker that fits them places them all;
// a restart tries one job of each kind, not the queue.
TEST(PlacementService, AChangeIsTriedOnOneJobOfEachKindNothingCanRun) {
  jobctl::testing::TempDir shared;
  const std::string path = shared.file("jobctl.db");
  const std::string h100 = spec(R"(,"resources":{"gpu":"H100"})");
  const std::string a100 = spec(R"(,"resources":{"gpu":"A100"})");
  std::vector<int64_t> h100_jobs, a100_jobs;
  {
    PlacementFixture f({}, path);
    f.add_worker({});
    for (int i = 0; i < 6; ++i) h100_jobs.push_back(f.submit(h100));
    for (int i = 0; i < 4; ++i) a100_jobs.push_back(f.submit(a100));
    for (int64_t id : h100_jobs) ASSERT_EQ(f.placement_of(id)["outcome"], "unplaceable");
    f.placement->tick();  // what the submits' hooks asked for was decided by submit(): drained here
    std::atomic<int> decisions{0};
    f.placement->set_decision_observer([&decisions](double) { ++decisions; });
    ASSERT_TRUE(f.placement->reevaluate());
    EXPECT_EQ(decisions, 0) << "nothing changed: no job decided";
    // A T4 fits neither kind: one decision per kind.
    f.add_worker({{"Tesla T4", 15360}});
    f.placement->tick();
    ASSERT_TRUE(f.placement->reevaluate());
    EXPECT_EQ(decisions, 2);
    for (int64_t id : h100_jobs) EXPECT_EQ(f.job(id).state, store::JobState::queued);
  }
  // A restart: the index comes back from the stored keys, and one job of each kind is tried.
  PlacementFixture g({}, path);
  std::atomic<int> decisions{0};
  g.placement->set_decision_observer([&decisions](double) { ++decisions; });
  ASSERT_TRUE(g.placement->reevaluate());
  EXPECT_EQ(decisions, 2);
  ASSERT_TRUE(g.placement->reevaluate());
  EXPECT_EQ(decisions, 2);
  // An H100 fits one kind: every job of it is decided and placed; the A100 kind is tried once.
  const int64_t worker = g.add_worker({{"NVIDIA H100 80GB HBM3", 81559}});
  g.placement->tick();
  ASSERT_TRUE(g.placement->reevaluate());
  EXPECT_EQ(decisions, 2 + 6 + 1);
  for (int64_t id : h100_jobs) {
    EXPECT_EQ(g.job(id).state, store::JobState::placed);
    EXPECT_EQ(g.placement_of(id)["chosen"]["option"], "local");
  }
  for (int64_t id : a100_jobs) EXPECT_EQ(g.job(id).state, store::JobState::queued);
  EXPECT_EQ(g.lease(worker), h100_jobs.front());
}

TEST(PlacementService, SpotOnDemandAndLocalPickTheCheapest) {
  PlacementFixture f(cloud_settings());
  // No local GPU: the cheapest V100 is spot.
  const int64_t spot = f.submit(spec(R"(,"resources":{"gpu":"V100"})"));
  json p = f.placement_of(spot);
  ASSERT_TRUE(p["chosen"].is_object()) << p["reason"];
  EXPECT_EQ(p["chosen"]["option"], "spot") << p["reason"];
  EXPECT_EQ(p["chosen"]["provider"], "sim");
  // Spot never: on-demand.
  const int64_t od = f.submit(spec(R"(,"resources":{"gpu":"V100"},"placement":{"spot":"never"})"));
  json q = f.placement_of(od);
  EXPECT_EQ(q["chosen"]["option"], "on_demand");
  EXPECT_EQ(q["chosen"]["instance_type"], "p3.2xlarge");
  EXPECT_NEAR(q["chosen"]["usd_per_hour"].get<double>(), 3.06, 1e-9);
  // Matching: a local worker is not offered cloud jobs; an instance of the chosen type and
  // market is.
  const int64_t local = f.add_worker({{"Tesla V100-SXM2-16GB", 16384}});
  EXPECT_EQ(f.lease(local), std::nullopt);
  const int64_t wrong = f.add_worker({{"Tesla V100-SXM2-16GB", 16384}},
                                     jobs::WorkerInstance{"i-1", "sim", "p3.2xlarge", true});
  EXPECT_EQ(f.lease(wrong), spot);  // the spot instance takes the spot job, not the on-demand one
  const int64_t ondemand = f.add_worker({{"Tesla V100-SXM2-16GB", 16384}},
                                        jobs::WorkerInstance{"i-2", "sim", "p3.2xlarge", false});
  EXPECT_EQ(f.lease(ondemand), od);
  // With a local V100 registered (priced at its board power: no inventory entry), local wins.
  const int64_t loc = f.submit(spec(R"(,"resources":{"gpu":"V100"})"));
  json l = f.placement_of(loc);
  EXPECT_EQ(l["chosen"]["option"], "local") << l["reason"];
  EXPECT_EQ(f.lease(local), loc);
}

// The deadline rule of moves: a running spot job that the deadline policy sends to on-demand is
// moved now (its next heartbeat says move), and placed on demand once it is given back.
TEST(PlacementService, ARunningSpotJobTheDeadlinePolicySendsToOnDemandMovesNow) {
  PlacementFixture f(cloud_settings());
  const int64_t id = f.submit(spec(R"(,"resources":{"gpu":"V100"},"placement":{"deadline_hours":0.2})"));
  ASSERT_EQ(f.placement_of(id)["chosen"]["option"], "spot") << f.placement_of(id).dump(2);
  const int64_t w = f.add_worker({{"Tesla V100-SXM2-16GB", 16384}}, jobs::WorkerInstance{"i-1", "sim", "p3.2xlarge", true});
  ASSERT_EQ(f.lease(w), id);
  const int64_t epoch = f.job(id).lease_epoch;
  auto beat = [&](int step) {
    jobs::HeartbeatReport hb;
    hb.lease = {w, epoch};
    hb.progress_json = json{{"step", step}, {"total_steps", 100}}.dump();
    return f.svc->heartbeat(id, hb);
  };
  ASSERT_TRUE(beat(1));
  ASSERT_TRUE(f.placement->reevaluate());
  auto early = beat(2);
  ASSERT_TRUE(early);
  EXPECT_FALSE(early->move) << "12 minutes to go for seconds of work: spot is fine";
  // 11 minutes later, barely started: less time left than the work plus two changeovers.
  f.clock.advance_ms(11 * 60'000);
  ASSERT_TRUE(beat(3));
  ASSERT_TRUE(f.placement->reevaluate());
  auto late = beat(4);
  ASSERT_TRUE(late);
  EXPECT_TRUE(late->move);
  auto detail = f.svc->get_job(id);
  ASSERT_TRUE(detail);
  std::vector<std::string> types;
  for (const auto& e : detail->events) types.push_back(e.type);
  ASSERT_GE(types.size(), 2u);
  EXPECT_EQ(types[types.size() - 2], "deadline_policy");
  EXPECT_EQ(types.back(), "move_requested");
  EXPECT_NE(detail->events.back().detail_json.find("on_demand"), std::string::npos) << detail->events.back().detail_json;
  // Given back, the job is placed on demand.
  ASSERT_TRUE(f.svc->preempt(id, jobs::PreemptionReport{{w, epoch}, "moved by jobctld"}));
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(f.placement_of(id)["chosen"]["option"], "on_demand") << f.placement_of(id).dump(2);
  EXPECT_EQ(f.job(id).recoveries, 0);
  // Uniform Progress committed to on-demand for good when its safety net fired: spot can still be
  // launched, but the job does not go back to it.
  const int64_t od =
      f.add_worker({{"Tesla V100-SXM2-16GB", 16384}}, jobs::WorkerInstance{"i-2", "sim", "p3.2xlarge", false});
  ASSERT_EQ(f.lease(od), id);
  jobs::HeartbeatReport on_demand;
  on_demand.lease = {od, f.job(id).lease_epoch};
  on_demand.progress_json = json{{"step", 5}, {"total_steps", 100}}.dump();
  ASSERT_TRUE(f.svc->heartbeat(id, on_demand));
  ASSERT_TRUE(f.placement->reevaluate());
  auto stays = f.svc->heartbeat(id, on_demand);
  ASSERT_TRUE(stays);
  EXPECT_FALSE(stays->move) << "committed to on-demand";
}

// The deadline policy is asked at a job's first placement too, as the simulator asks it at the
// job's first tick: a deadline with less slack than Uniform Progress's safety net keeps (two
// changeovers) is placed on demand at once, not on spot to be moved a period later (a changeover
// the deadline may not have). A quote asks a policy of its own and leaves nothing behind.
TEST(PlacementService, AJobWhoseDeadlinePolicyWantsOnDemandFromTheStartIsPlacedOnDemand) {
  auto settings = cloud_settings();
  settings.provision_hours = 1.0 / 6;
  PlacementFixture f(settings);
  auto with_deadline = [](double hours) {
    return hours_long_v100_job(R"({"deadline_hours":)" + std::to_string(hours) + "}");
  };
  auto free = f.placement->quote(hours_long_v100_job("{}"));
  ASSERT_TRUE(free);
  ASSERT_EQ((*free)["chosen"]["option"], "spot") << free->dump(2);
  const double c0 = (*free)["chosen"]["estimated_hours"].get<double>();
  // Slack 0.5 h, above two changeovers: spot, by the policy too.
  auto roomy = f.placement->quote(with_deadline(c0 + 0.5));
  ASSERT_TRUE(roomy);
  EXPECT_EQ((*roomy)["chosen"]["option"], "spot") << roomy->dump(2);
  EXPECT_EQ((*roomy)["deadline_policy"]["decision"], "spot") << roomy->dump(2);
  // Slack 0.3 h: spot fits the deadline, but the safety net fires at once.
  const int64_t id = f.submit(with_deadline(c0 + 0.3));
  const json p = f.placement_of(id);
  EXPECT_EQ(p["chosen"]["option"], "on_demand") << p.dump(2);
  EXPECT_EQ(p["deadline_policy"]["decision"], "on-demand") << p.dump(2);
  EXPECT_NE(p["reason"].get<std::string>().find("deadline policy moved it to on-demand"), std::string::npos)
      << p["reason"];
  auto again = f.placement->quote(with_deadline(c0 + 0.5));
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)["chosen"]["option"], "spot") << "the quotes' policies are not the job's";
}

// The deadline rule back to spot: a job with a deadline placed on demand while no spot V100 could
// be launched moves to spot once one can, when its deadline policy says so (Uniform Progress: it
// is ahead of its line, and not committed to on-demand).
TEST(PlacementService, AnOnDemandDeadlineJobGoesBackToSpotWhenItsPolicyAllows) {
  PlacementFixture f(cloud_settings());
  OnDemandWhileSpotIsSetAside job;
  ASSERT_NO_FATAL_FAILURE(start_on_demand_while_spot_is_set_aside(f, R"({"deadline_hours":100})", job));
  const int64_t id = job.id;
  // Nothing done yet: behind its line, the job stays on demand while spot cannot be launched.
  auto beat = [&job] { return job.beat(0); };
  ASSERT_TRUE(beat());
  ASSERT_TRUE(f.placement->reevaluate());
  auto before = beat();
  ASSERT_TRUE(before);
  EXPECT_FALSE(before->move) << "no spot offer can be launched yet, and the job is behind its line";

  // 1% done, ahead of the line, and spot can be launched again.
  f.clock.advance_ms(OnDemandWhileSpotIsSetAside::kSetAsideMs + 1);
  ASSERT_TRUE(job.beat(10));
  ASSERT_TRUE(f.placement->reevaluate());
  auto after = beat();
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->move) << "spot can be launched, and 100 hours leave plenty of slack";
  auto detail = f.svc->get_job(id);
  ASSERT_TRUE(detail);
  ASSERT_GE(detail->events.size(), 2u);
  const auto& policy = detail->events[detail->events.size() - 2];
  ASSERT_EQ(policy.type, "deadline_policy");
  const json why = json::parse(policy.detail_json);
  EXPECT_EQ(why["decision"], "spot") << why.dump();
  EXPECT_EQ(why["policy"], "up") << why.dump();
  EXPECT_EQ(detail->events.back().type, "move_requested");
  const json move = json::parse(detail->events.back().detail_json);
  EXPECT_EQ(move["to"], "spot") << move.dump();
  EXPECT_NE(move.value("reason", "").find("spot can be launched again"), std::string::npos) << move.dump();

  // Asked once: the next pass, before the worker's heartbeat carried the word, asks nothing more.
  const size_t events = detail->events.size();
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(f.svc->get_job(id)->events.size(), events);
  ASSERT_TRUE(f.svc->preempt(id, jobs::PreemptionReport{{job.instance, job.epoch}, "moved by jobctld"}));
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(f.placement_of(id)["chosen"]["option"], "spot") << f.placement_of(id).dump(2);
}

// Uniform Progress waits for spot while ahead of its line: an on-demand job that got ahead while no
// spot could be launched stops and waits, queued, and goes to spot once it can be launched.
TEST(PlacementService, AnOnDemandDeadlineJobAheadOfItsLineStopsAndWaitsForSpot) {
  PlacementFixture f(cloud_settings());
  OnDemandWhileSpotIsSetAside job;
  ASSERT_NO_FATAL_FAILURE(start_on_demand_while_spot_is_set_aside(f, R"({"deadline_hours":100})", job));
  const int64_t id = job.id;
  ASSERT_TRUE(job.beat(10));  // 1% done: far ahead of a line that asks 1% per hundred minutes
  ASSERT_TRUE(f.placement->reevaluate());
  auto asked = job.beat(10);
  ASSERT_TRUE(asked);
  ASSERT_TRUE(asked->move) << "ahead of its line with no spot to launch: the policy says wait";
  auto detail = f.svc->get_job(id);
  ASSERT_TRUE(detail);
  const json why = json::parse(detail->events[detail->events.size() - 2].detail_json);
  EXPECT_EQ(why["decision"], "none") << why.dump();
  EXPECT_NE(why.value("action", "").find("waits"), std::string::npos) << why.dump();

  ASSERT_TRUE(f.svc->preempt(id, jobs::PreemptionReport{{job.instance, job.epoch}, "moved by jobctld"}));
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(f.job(id).state, store::JobState::queued);
  EXPECT_EQ(f.placement_of(id)["outcome"], "wait_spot") << f.placement_of(id).dump(2);
  // Asked again every pass, and the news written once: one `waiting_for_spot` event per wait (this
  // one and the one at submission).
  f.clock.advance_ms(60'000);
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(f.placement_of(id)["outcome"], "wait_spot");
  size_t waits = 0;
  const auto waited = f.svc->get_job(id);
  ASSERT_TRUE(waited);
  for (const auto& e : waited->events) waits += e.type == "waiting_for_spot";
  EXPECT_EQ(waits, 2u);

  f.clock.advance_ms(OnDemandWhileSpotIsSetAside::kSetAsideMs);
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(f.job(id).state, store::JobState::placed);
  EXPECT_EQ(f.placement_of(id)["chosen"]["option"], "spot") << f.placement_of(id).dump(2);
}

// A command job with no runtime hint: priced per hour assuming an hour until a job of its name
// has run; then from that run's hours on its GPU model (scaled by speed elsewhere).
TEST(PlacementService, ACommandJobIsPricedFromTheRunsOfItsName) {
  PlacementFixture f(cloud_settings());
  const std::string spec = R"({"name":"sweep","command":["python3","train.py"],"resources":{"gpu":"V100"}})";
  auto before = f.placement->quote(spec);
  ASSERT_TRUE(before);
  EXPECT_NE((*before)["reason"].get<std::string>().find("no runtime estimate"), std::string::npos) << before->dump(2);

  jobs::WorkerRegistration reg;
  reg.name = "v100";
  reg.capabilities.gpus = {{"Tesla V100-SXM2-16GB", 16384}};
  reg.capabilities.cpu_cores = 4;
  reg.capabilities.memory_mb = 16384;
  reg.capabilities.commands = true;
  auto worker = f.svc->register_worker(reg);
  ASSERT_TRUE(worker);
  const int64_t id = f.submit(spec);
  ASSERT_EQ(f.lease(worker->worker_id), id);
  const jobs::LeaseRef lease{worker->worker_id, f.job(id).lease_epoch};
  jobs::HeartbeatReport hb;
  hb.lease = lease;
  hb.progress_json = R"({"step":1,"total_steps":100})";
  ASSERT_TRUE(f.svc->heartbeat(id, hb));  // started
  f.clock.advance_ms(45 * 60'000);         // a run of 0.75 h
  ASSERT_TRUE(f.svc->complete(id, jobs::CompletionReport{lease, R"({"loss":0.1})"}));

  auto after = f.placement->quote(spec);
  ASSERT_TRUE(after);
  const std::string reason = (*after)["reason"];
  EXPECT_NE(reason.find("runtime from 1 earlier run of sweep on V100"), std::string::npos) << reason;
  EXPECT_NE(reason.find("median 45 min"), std::string::npos) << reason;
  for (const auto& c : (*after)["candidates"])
    if (c["option"] == "local") {
      EXPECT_NEAR(c["estimated_hours"].get<double>(), 0.75, 1e-6) << c.dump();
    }
  EXPECT_EQ((*after)["runtime_basis"], "history");
  EXPECT_EQ((*before)["runtime_basis"], "assumed");
  // Another name has no history.
  auto other = f.placement->quote(R"({"name":"other","command":["python3","train.py"],"resources":{"gpu":"V100"}})");
  ASSERT_TRUE(other);
  EXPECT_NE((*other)["reason"].get<std::string>().find("no runtime estimate"), std::string::npos);
  // Nor has the same name with another command: the history is keyed on both.
  auto longer = f.placement->quote(
      R"({"name":"sweep","command":["python3","train.py","--steps","30000"],"resources":{"gpu":"V100"}})");
  ASSERT_TRUE(longer);
  EXPECT_NE((*longer)["reason"].get<std::string>().find("no runtime estimate"), std::string::npos) << longer->dump(2);
  EXPECT_EQ((*longer)["runtime_basis"], "assumed");
  // The key does not depend on how the spec was written: fields in another order, defaults spelt out.
  auto same = f.placement->quote(
      R"({"resources":{"gpus":1,"gpu":"V100"},"command":["python3","train.py"],"name":"sweep","priority":50})");
  ASSERT_TRUE(same);
  EXPECT_EQ((*same)["runtime_basis"], "history") << same->dump(2);
}

// The savings rule of moves: a job that went to an on-demand instance because the owned V100 was
// busy moves to it once it frees up (the remaining work there costs far less than the move).
TEST(PlacementService, ARunningCloudJobMovesToTheOwnedGpuThatFreedUp) {
  PlacementFixture f(cloud_settings());
  auto big = [](const std::string& extra) {
    return R"({"model":{"kind":"mlp","hidden":[4096,4096]},"data":{"dataset":"synthetic","samples":1000000,)"
           R"("features":784,"classes":10},"train":{"epochs":20},"resources":{"gpu":"V100"})" + extra + "}";
  };
  const int64_t local = f.add_worker({{"Tesla V100-SXM2-16GB", 16384}});
  const int64_t first = f.submit(big(""));
  ASSERT_EQ(f.placement_of(first)["chosen"]["option"], "local");
  const double hours = f.placement_of(first)["chosen"]["estimated_hours"].get<double>();
  ASSERT_GT(hours, 0.5) << "the job must be long enough for a move to pay";
  ASSERT_EQ(f.lease(local), first);
  const int64_t first_epoch = f.job(first).lease_epoch;
  jobs::HeartbeatReport hb1;
  hb1.lease = {local, first_epoch};
  hb1.progress_json = json{{"step", 1}, {"total_steps", 1000}}.dump();
  ASSERT_TRUE(f.svc->heartbeat(first, hb1));

  // The owned V100 is busy for `hours`: a job due in 1.5 x `hours` goes on demand.
  const int64_t second =
      f.submit(big(R"(,"placement":{"spot":"never","deadline_hours":)" + std::to_string(1.5 * hours + 0.1) + "}"));
  ASSERT_EQ(f.placement_of(second)["chosen"]["option"], "on_demand") << f.placement_of(second).dump(2);
  const int64_t instance =
      f.add_worker({{"Tesla V100-SXM2-16GB", 16384}}, jobs::WorkerInstance{"i-1", "sim", "p3.2xlarge", false});
  ASSERT_EQ(f.lease(instance), second);
  const int64_t epoch = f.job(second).lease_epoch;
  auto beat = [&] {
    jobs::HeartbeatReport hb;
    hb.lease = {instance, epoch};
    hb.progress_json = json{{"step", 10}, {"total_steps", 1000}}.dump();
    return f.svc->heartbeat(second, hb);
  };
  ASSERT_TRUE(beat());
  ASSERT_TRUE(f.placement->reevaluate());
  auto busy = beat();
  ASSERT_TRUE(busy);
  EXPECT_FALSE(busy->move) << "the owned V100 is still busy";

  ASSERT_TRUE(f.svc->complete(first, jobs::CompletionReport{{local, first_epoch}, R"({"final_loss":1})"}));
  ASSERT_TRUE(f.placement->reevaluate());
  auto freed = beat();
  ASSERT_TRUE(freed);
  EXPECT_TRUE(freed->move) << "the owned V100 is idle and far cheaper";
  auto detail = f.svc->get_job(second);
  ASSERT_TRUE(detail);
  EXPECT_EQ(detail->events.back().type, "move_requested");
  EXPECT_NE(detail->events.back().detail_json.find("savings: an owned worker runs the remaining"), std::string::npos)
      << detail->events.back().detail_json;

  ASSERT_TRUE(f.svc->preempt(second, jobs::PreemptionReport{{instance, epoch}, "moved by jobctld"}));
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(f.placement_of(second)["chosen"]["option"], "local") << f.placement_of(second).dump(2);
  EXPECT_EQ(f.lease(local), second);
}

// No move for savings when they are switched off (placement.max_moves_per_hour 0), or when the
// job's spec sends it to the cloud (placement.mode cloud): it stays on its instance.
TEST(PlacementService, NoMovesForSavingsWhenSwitchedOffOrTheJobAskedForTheCloud) {
  for (const bool switched_off : {true, false}) {
    auto settings = cloud_settings();
    if (switched_off) settings.max_moves_per_hour = 0;
    PlacementFixture f(settings);
    const std::string big =
        R"({"model":{"kind":"mlp","hidden":[4096,4096]},"data":{"dataset":"synthetic","samples":1000000,)"
        R"("features":784,"classes":10},"train":{"epochs":20},"resources":{"gpu":"V100"},"placement":{"spot":"never")" +
        std::string(switched_off ? "" : R"(,"mode":"cloud")") + "}}";
    const int64_t id = f.submit(big);  // no owned V100 yet: on demand
    ASSERT_EQ(f.placement_of(id)["chosen"]["option"], "on_demand");
    const int64_t instance =
        f.add_worker({{"Tesla V100-SXM2-16GB", 16384}}, jobs::WorkerInstance{"i-1", "sim", "p3.2xlarge", false});
    ASSERT_EQ(f.lease(instance), id);
    f.add_worker({{"Tesla V100-SXM2-16GB", 16384}});  // an idle owned V100
    jobs::HeartbeatReport hb;
    hb.lease = {instance, f.job(id).lease_epoch};
    hb.progress_json = json{{"step", 10}, {"total_steps", 1000}}.dump();
    ASSERT_TRUE(f.svc->heartbeat(id, hb));
    ASSERT_TRUE(f.placement->reevaluate());
    auto r = f.svc->heartbeat(id, hb);
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->move) << (switched_off ? "switched off" : "placement.mode cloud");
  }
}

// The savings rule of moves, for a cheaper cloud offer: a job placed on demand while no spot V100
// could be launched moves to spot once one can. Its spec sends it to the cloud (placement.mode
// cloud): an idle owned V100 does not take it, the cheaper cloud offer does.
TEST(PlacementService, ARunningOnDemandJobMovesToACheaperCloudOfferOnceItCanBeLaunched) {
  PlacementFixture f(cloud_settings());
  OnDemandWhileSpotIsSetAside job;
  ASSERT_NO_FATAL_FAILURE(start_on_demand_while_spot_is_set_aside(f, R"({"mode":"cloud"})", job));
  const int64_t id = job.id;
  auto beat = [&job] { return job.beat(); };
  f.add_worker({{"Tesla V100-SXM2-16GB", 16384}});  // an idle owned V100: not for a job sent to the cloud
  ASSERT_TRUE(f.placement->reevaluate());
  auto before = beat();
  ASSERT_TRUE(before);
  EXPECT_FALSE(before->move) << "no spot offer can be launched yet, and the owned V100 is not for it";

  f.clock.advance_ms(OnDemandWhileSpotIsSetAside::kSetAsideMs + 1);  // spot can be launched again
  ASSERT_TRUE(beat());
  ASSERT_TRUE(f.placement->reevaluate());
  auto after = beat();
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->move) << "spot runs the rest for far less than the move costs";
  auto detail = f.svc->get_job(id);
  ASSERT_TRUE(detail);
  ASSERT_EQ(detail->events.back().type, "move_requested");
  const json move = json::parse(detail->events.back().detail_json);
  EXPECT_EQ(move["to"], "spot") << move.dump();
  EXPECT_NE(move.value("reason", "").find("savings: a cheaper cloud offer runs the remaining"), std::string::npos)
      << move.dump();
  EXPECT_GT(move["saving_usd"].get<double>(), 1.5 * move["move_cost_usd"].get<double>()) << move.dump();
  EXPECT_GT(move["move_cost_usd"].get<double>(), 0) << "checkpoint, provisioning and restart, billed on both sides";

  ASSERT_TRUE(f.svc->preempt(id, jobs::PreemptionReport{{job.instance, job.epoch}, "moved by jobctld"}));
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(f.placement_of(id)["chosen"]["option"], "spot") << f.placement_of(id).dump(2);
  EXPECT_EQ(f.job(id).recoveries, 0);
}

// Launch failures set cheaper offers aside for a while: a 1-GPU V100 job (usually p3.2xlarge spot)
// whose 1- and 4-GPU offers are all set aside waits for them rather than take an 8-GPU instance
// at many times its price, and the reason says so; once they are back it is placed there. With
// placement.max_price_jump 0 it takes what is left.
TEST(PlacementService, AJobWaitsForCoolingOffersRatherThanJumpToManyTimesItsPrice) {
  for (const double max_jump : {scheduler::kDefaultMaxPriceJump, 0.0}) {
    auto settings = cloud_settings();
    settings.max_price_jump = max_jump;
    PlacementFixture f(settings);
    const int64_t until = f.clock.steady_ms() + 600'000;
    for (const auto& o : f.placement->offers())
      if (o.instance_type == "p3.2xlarge" || o.instance_type == "p3.8xlarge")
        f.placement->set_aside(o.instance_type, o.region, /*spot=*/false, until);
    const int64_t id = f.submit(hours_long_v100_job(R"({"mode":"cloud"})"));
    const json placed = f.placement_of(id);
    if (max_jump == 0) {
      EXPECT_EQ(placed["chosen"]["instance_type"], "p3.16xlarge") << placed.dump(2);
      continue;
    }
    EXPECT_EQ(placed["outcome"], "unplaceable") << placed.dump(2);
    EXPECT_TRUE(placed["chosen"].is_null()) << placed.dump(2);
    const std::string reason = placed["reason"];
    EXPECT_NE(reason.find("waits for p3.2xlarge in us-east-1 (spot) at $0.520/h, set aside after a failed launch for "
                          "another 10 min, rather than pay $4.855/h, more than 3x its price and more than its on-demand $3.060/h"),
              std::string::npos) << reason;
    EXPECT_NE(reason.find("(placement.max_price_jump)"), std::string::npos) << reason;
    EXPECT_EQ(f.job(id).state, store::JobState::queued);
    f.clock.advance_ms(600'001);
    ASSERT_TRUE(f.placement->reevaluate());
    EXPECT_EQ(f.placement_of(id)["chosen"]["instance_type"], "p3.2xlarge") << f.placement_of(id).dump(2);
    EXPECT_EQ(f.placement_of(id)["chosen"]["option"], "spot") << f.placement_of(id).dump(2);
  }
}

// At most placement.max_moves_per_hour moves for savings per job: with one allowed and used, the
// job stays where it is for the rest of the hour however much a move would save.
TEST(PlacementService, MovesForSavingsAreRateLimitedPerJob) {
  auto settings = cloud_settings();
  settings.max_moves_per_hour = 1;
  PlacementFixture f(settings);
  const int64_t id = f.submit(hours_long_v100_job(R"({"spot":"never"})"));  // no owned V100 yet: on demand
  ASSERT_EQ(f.placement_of(id)["chosen"]["option"], "on_demand");
  int instances = 0;
  auto run_on_an_instance = [&] {
    const int64_t w = f.add_worker({{"Tesla V100-SXM2-16GB", 16384}},
                                   jobs::WorkerInstance{"i-" + std::to_string(++instances), "sim", "p3.2xlarge", false});
    EXPECT_EQ(f.lease(w), id);
    jobs::HeartbeatReport hb;
    hb.lease = {w, f.job(id).lease_epoch};
    hb.progress_json = json{{"step", 10}, {"total_steps", 1000}}.dump();
    EXPECT_TRUE(f.svc->heartbeat(id, hb));
    return hb;
  };
  auto hb = run_on_an_instance();
  const int64_t owned = f.add_worker({{"Tesla V100-SXM2-16GB", 16384}});  // frees up: the hour's one move
  ASSERT_TRUE(f.placement->reevaluate());
  auto r = f.svc->heartbeat(id, hb);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->move);
  ASSERT_TRUE(f.svc->preempt(id, jobs::PreemptionReport{hb.lease, "moved by jobctld"}));
  ASSERT_TRUE(f.placement->reevaluate());
  ASSERT_EQ(f.placement_of(id)["chosen"]["option"], "local");
  ASSERT_EQ(f.lease(owned), id);
  // The owned machine is gone soon after; the job goes back on demand.
  ASSERT_TRUE(f.svc->release_worker_leases(owned, "test: the owned machine is gone"));
  ASSERT_TRUE(f.placement->reevaluate());
  ASSERT_EQ(f.placement_of(id)["chosen"]["option"], "on_demand");
  hb = run_on_an_instance();
  // Another owned V100 frees up: a move would save as much as before, but the hour's move is spent.
  f.add_worker({{"Tesla V100-SXM2-16GB", 16384}});
  ASSERT_TRUE(f.placement->reevaluate());
  r = f.svc->heartbeat(id, hb);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->move) << "placement.max_moves_per_hour 1, used";
  // An hour after the first move, it may move again.
  f.clock.advance_ms(3'600'000);
  ASSERT_TRUE(f.svc->heartbeat(id, hb));
  ASSERT_TRUE(f.placement->reevaluate());
  r = f.svc->heartbeat(id, hb);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->move);
}

// The priority rule of moves: a high-priority job that misses its deadline waiting for the busy
// owned V100 takes it from the low-priority job running there, which is moved (not killed) and
// waits its turn.
TEST(PlacementService, ALateHighPriorityJobTakesTheOwnedGpuFromALowerOne) {
  PlacementFixture f;  // no cloud: the owned V100 is the only option
  auto big = [](int priority, const std::string& extra) {
    return R"({"model":{"kind":"mlp","hidden":[4096,4096]},"data":{"dataset":"synthetic","samples":1000000,)"
           R"("features":784,"classes":10},"train":{"epochs":20},"resources":{"gpu":"V100"},"priority":)" +
           std::to_string(priority) + extra + "}";
  };
  const int64_t w = f.add_worker({{"Tesla V100-SXM2-16GB", 16384}});
  const int64_t low = f.submit(big(10, ""));
  ASSERT_EQ(f.lease(w), low);
  const int64_t epoch = f.job(low).lease_epoch;
  jobs::HeartbeatReport hb;
  hb.lease = {w, epoch};
  hb.progress_json = json{{"step", 5}, {"total_steps", 1000}}.dump();
  ASSERT_TRUE(f.svc->heartbeat(low, hb));
  const double hours = f.placement_of(low)["chosen"]["estimated_hours"].get<double>();

  // Higher priority but no deadline, or a deadline but no higher priority: it waits its turn.
  const int64_t patient = f.submit(big(60, ""));
  const int64_t peer = f.submit(big(10, R"(,"placement":{"deadline_hours":)" + std::to_string(hours * 0.5) + "}"));
  ASSERT_TRUE(f.placement->reevaluate());
  auto r = f.svc->heartbeat(low, hb);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->move);

  // Higher priority and due before the V100 frees: the low job is asked to move.
  const int64_t urgent = f.submit(big(80, R"(,"placement":{"deadline_hours":)" + std::to_string(hours * 1.5) + "}"));
  EXPECT_FALSE(f.placement_of(urgent)["chosen"]["meets_deadline"].get<bool>()) << f.placement_of(urgent).dump(2);
  ASSERT_TRUE(f.placement->reevaluate());
  r = f.svc->heartbeat(low, hb);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->move);
  auto detail = f.svc->get_job(low);
  ASSERT_TRUE(detail);
  EXPECT_EQ(detail->events.back().type, "move_requested");
  EXPECT_NE(detail->events.back().detail_json.find("priority: job " + std::to_string(urgent)), std::string::npos)
      << detail->events.back().detail_json;

  // Given back, the low job waits (it is not killed: it resumes later from its checkpoint); the
  // V100 goes to the waiting jobs by priority: the urgent one (80) first.
  ASSERT_TRUE(f.svc->preempt(low, jobs::PreemptionReport{{w, epoch}, "moved by jobctld"}));
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(f.job(low).state == store::JobState::queued || f.job(low).state == store::JobState::placed, true);
  EXPECT_EQ(f.job(low).recoveries, 0);
  EXPECT_EQ(f.lease(w), urgent);
  (void)patient;
  (void)peer;
}

// The worked quote of docs/cost-model.md ("A worked quote"): a 4 x V100 box bought at $2,000 a
// GPU (3 years, 50% utilisation, 0.3 kW a GPU at $0.15/kWh) against the seed catalog's AWS V100
// instances. Hand figures: capex 2000 / (3 x 8760 x 0.5) = $0.152207/h, energy 0.3 x 0.15 =
// $0.045/h, so $0.197207 per GPU-hour; a 1-GPU job pays one GPU of the box, a 4-GPU job four.
TEST(PlacementService, TheWorkedQuoteOfTheCostModelMatchesItsHandFigures) {
  PlacementSettings settings;
  settings.clouds = {"aws"};
  settings.local_gpus = {cost::LocalGpuInventory{.gpu_model = "V100", .count = 4, .purchase_usd = 2000,
                                                 .lifetime_years = 3, .utilisation = 0.5, .power_kw = 0.3,
                                                 .electricity_usd_per_kwh = 0.15}};
  PlacementFixture f(settings);
  const std::vector<jobs::GpuDevice> box(4, jobs::GpuDevice{"Tesla V100-SXM2-16GB", 16384});
  f.add_worker(box);
  const double per_gpu_hour = 2000.0 / (3 * 8760 * 0.5) + 0.3 * 0.15;
  EXPECT_NEAR(per_gpu_hour, 0.197207, 1e-6);
  for (int gpus : {1, 4}) {
    auto q = f.placement->quote(spec(R"(,"resources":{"gpu":"V100","gpus":)" + std::to_string(gpus) + "}"));
    ASSERT_TRUE(q) << q.error().message;
    ASSERT_TRUE((*q)["chosen"].is_object()) << q->dump(2);
    const json& local = (*q)["chosen"];
    EXPECT_EQ(local["option"], "local") << q->dump(2);
    EXPECT_NEAR(local["usd_per_hour"].get<double>(), gpus * per_gpu_hour, 1e-6) << gpus << " GPU(s)";
    EXPECT_NEAR(local["estimated_cost_usd"].get<double>(),
                local["usd_per_hour"].get<double>() * local["estimated_hours"].get<double>(), 1e-9);
    // The seed catalog's on-demand V100 rows, quoted beside it.
    std::map<std::string, double> on_demand;
    for (const auto& c : (*q)["candidates"])
      if (c["option"] == "on_demand" && c["cloud"] == "aws" && c["region"] == "us-east-1")
        on_demand[c["instance_type"].get<std::string>()] = c["usd_per_hour"].get<double>();
    if (gpus == 1) {
      EXPECT_NEAR(on_demand["p3.2xlarge"], 3.06, 1e-9) << q->dump(2);
    } else {
      EXPECT_NEAR(on_demand["p3.8xlarge"], 12.24, 1e-9) << q->dump(2);
    }
  }
}

// A Slurm partition (its snapshot from daemon/slurm/) is quoted beside the local workers and the
// cloud offers: priced by cost.local_gpus for its model, with the queue wait Slurm gives, and
// rejected while no slurm section lets jobctld submit Slurm jobs.
TEST(PlacementService, TheQuoteShowsASlurmPartitionWithItsQueueWait) {
  PlacementSettings settings = cloud_settings();
  settings.local_gpus = {cost::LocalGpuInventory{.gpu_model = "V100", .count = 8, .purchase_usd = 2000,
                                                 .lifetime_years = 3, .utilisation = 0.5, .power_kw = 0.3,
                                                 .electricity_usd_per_kwh = 0.15}};
  PlacementFixture f(settings);
  f.placement->set_partition_source([] {
    return std::vector<scheduler::LocalCapacity::Partition>{{"gpu", "V100", 4, 16, {0.25, 0.25, 1.0, 2.0}}};
  });
  auto q = f.placement->quote(spec(R"(,"resources":{"gpu":"V100","gpus":2})"));
  ASSERT_TRUE(q) << q.error().message;
  const json* partition = nullptr;
  for (const auto& c : (*q)["candidates"])
    if (c["option"] == "slurm") partition = &c;
  ASSERT_NE(partition, nullptr) << q->dump(2);
  EXPECT_EQ((*partition)["partition"], "gpu");
  EXPECT_EQ((*partition)["label"], "slurm gpu V100 x2 (4-GPU node)");
  EXPECT_NEAR((*partition)["usd_per_hour"].get<double>(), 2 * (2000.0 / (3 * 8760 * 0.5) + 0.3 * 0.15), 1e-6);
  EXPECT_DOUBLE_EQ((*partition)["queue_wait_hours"].get<double>(), 0.25);
  EXPECT_EQ((*partition)["rejection"], "no_provider");
  EXPECT_NE((*q)["chosen"]["option"], "slurm");
}

TEST(PlacementService, PriceCapMemoryAndDeadlineAreHonoured) {
  PlacementFixture f(cloud_settings());
  const int64_t capped =
      f.submit(spec(R"(,"resources":{"gpu":"V100"},"placement":{"mode":"cloud","max_usd_per_hour":0.1})"));
  EXPECT_EQ(f.job(capped).state, store::JobState::queued);
  EXPECT_NE(f.placement_of(capped)["reason"].get<std::string>().find("price_cap"), std::string::npos);

  // A model far too big for a 16 GB V100 (4096 x 4096 x 64 layers... as wide as the spec allows).
  const std::string big = R"({"model":{"kind":"mlp","hidden":[16384,16384,16384,16384,16384,16384]},)"
                          R"("data":{"dataset":"synthetic","samples":256},"train":{"batch_size":4096},)"
                          R"("resources":{"gpu":"V100"},"placement":{"mode":"cloud"}})";
  auto q = f.placement->quote(big);
  ASSERT_TRUE(q) << q.error().message;
  int memory = 0;
  for (const auto& c : (*q)["candidates"]) memory += c.value("rejection", "") == "memory";
  EXPECT_GT(memory, 0) << (*q)["reason"];

  // A deadline nothing meets: the earliest finish, and the reason says so.
  const int64_t late = f.submit(spec(R"(,"resources":{"gpu":"V100"},"placement":{"deadline_hours":0.0001})"));
  json p = f.placement_of(late);
  ASSERT_TRUE(p["chosen"].is_object());
  EXPECT_FALSE(p["chosen"]["meets_deadline"].get<bool>());
  EXPECT_EQ(p["reason_code"], "earliest_missing_deadline");
}

TEST(PlacementService, QuoteEqualsThePlacementMade) {
  PlacementFixture f(cloud_settings());
  f.add_worker({});
  const std::string s = spec(R"(,"placement":{"deadline_hours":5})");
  auto q = f.placement->quote(s);
  ASSERT_TRUE(q);
  const int64_t id = f.submit(s);
  json p = f.placement_of(id);
  json a = *q, b = p;
  for (json* j : {&a, &b}) {
    j->erase("decided_ms");
    j->erase("deadline_left_hours");  // same clock, but the quote's job is "submitted" now too
  }
  EXPECT_EQ(a["chosen"], b["chosen"]);
  EXPECT_EQ(a["candidates"], b["candidates"]);
  EXPECT_EQ(a["reason"], b["reason"]);
}

TEST(Ledger, AccruesPerSecondReplacesByKeyAndRefusesBadEntries) {
  PlacementFixture f;
  auto& ledger = *f.ledger;
  ASSERT_TRUE(ledger.accrue(ledger::LedgerEntry{0, "instance:i-1", "spot", 0, 3600'000, 0.92, "alice", 3.06}));
  ASSERT_TRUE(ledger.accrue(ledger::LedgerEntry{0, "instance:i-2", "on_demand", 0, 1'500, 3.06, "bob", 0}));  // 2 s billed
  // Extending an open interval replaces it.
  ASSERT_TRUE(ledger.accrue(ledger::LedgerEntry{0, "instance:i-1", "spot", 0, 7200'000, 0.92, "alice", 3.06}));
  auto rows = ledger.rows(0, 10'000'000);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 2u);
  double total = 0;
  for (const auto& r : *rows) total += r.usd;
  EXPECT_NEAR(total, 2 * 0.92 + 2 * 3.06 / 3600, 1e-9);
  EXPECT_EQ(ledger::billed_seconds(0, 1'500), 2);
  EXPECT_FALSE(ledger.accrue(ledger::LedgerEntry{0, "", "spot", 0, 1, 1, "", 0}));
  EXPECT_FALSE(ledger.accrue(ledger::LedgerEntry{0, "x", "reserved", 0, 1, 1, "", 0}));
  EXPECT_FALSE(ledger.accrue(ledger::LedgerEntry{0, "x", "spot", 5, 1, 1, "", 0}));
  EXPECT_FALSE(ledger.accrue(ledger::LedgerEntry{0, "x", "spot", 0, 1, -1, "", 0}));
  EXPECT_EQ(ledger.rows(0, 10'000'000)->size(), 2u);

  auto by_user = ledger::spend_report(ledger, 0, 10'000'000, "user");
  ASSERT_TRUE(by_user);
  ASSERT_EQ(by_user->groups.size(), 2u);
  EXPECT_EQ(by_user->groups[0].key, "alice");
  EXPECT_NEAR(by_user->groups[0].usd, 1.84, 1e-9);
  EXPECT_NEAR(by_user->groups[0].on_demand_usd, 6.12, 1e-9);
  EXPECT_NEAR(by_user->groups[0].savings_fraction(), 1 - 0.92 / 3.06, 1e-9);
  // A period covering half of alice's two hours counts half.
  auto half = ledger::spend_report(ledger, 3600'000, 10'000'000, "placement");
  ASSERT_TRUE(half);
  ASSERT_EQ(half->groups.size(), 1u);
  EXPECT_EQ(half->groups[0].key, "spot");
  EXPECT_NEAR(half->groups[0].usd, 0.92, 1e-9);
  EXPECT_FALSE(ledger::spend_report(ledger, 0, 1, "team"));
  EXPECT_FALSE(ledger::spend_report(ledger, 5, 1, "job"));
}

TEST(Calibration, HeartbeatsCalibrateAndPersistAcrossARestart) {
  jobctl::testing::TempDir shared;
  const std::string path = shared.file("jobctl.db");
  double before = 0;
  {
    PlacementFixture f({}, path);
    const int64_t w = f.add_worker({});
    const int64_t id = f.submit(spec(""));
    ASSERT_EQ(f.lease(w), id);
    const int64_t epoch = f.job(id).lease_epoch;
    for (int i = 1; i <= 5; ++i) {
      jobs::HeartbeatReport hb;
      hb.lease = {w, epoch};
      hb.progress_json = json{{"step", 20 * i}, {"total_steps", 100}, {"step_ms", 2.0}, {"start_step", 0}}.dump();
      ASSERT_TRUE(f.svc->heartbeat(id, hb));
    }
    f.placement->tick();
    EXPECT_TRUE(f.placement->calibrations().empty()) << "a run calibrates once it has ended";
    jobs::CompletionReport done;
    done.lease = {w, epoch};
    done.result_json = json{{"elapsed_s", 0.5}, {"steps", 100}}.dump();
    ASSERT_TRUE(f.svc->complete(id, done));
    EXPECT_TRUE(f.placement->calibrations().empty()) << "recorded on the writer thread, applied by the placement thread";
    EXPECT_GT(f.wakes.load(), 0);
    f.placement->tick();
    auto cal = f.placement->calibrations();
    ASSERT_EQ(cal.size(), 1u);
    EXPECT_EQ(cal[0].gpu_model, "cpu");
    EXPECT_EQ(cal[0].model_kind, "mlp");
    EXPECT_EQ(cal[0].samples, 1);
    EXPECT_NEAR(cal[0].overhead_seconds, 0.5 - 100 * 0.002, 1e-9);
    before = cal[0].efficiency;
    EXPECT_GT(before, 0);
  }
  PlacementFixture g({}, path);
  auto cal = g.placement->calibrations();
  ASSERT_EQ(cal.size(), 1u);
  EXPECT_EQ(cal[0].samples, 1);
  EXPECT_NEAR(cal[0].efficiency, before, before * 1e-9);
  EXPECT_NEAR(cal[0].overhead_seconds, 0.3, 1e-9);
}

// The first job of scripts/start.sh is submitted before the worker registers, and before the
// placement thread's first tick (which also runs the first periodic re-evaluation). The
// registration wakes placement and the job is placed by the next tick, not at the next periodic
// re-evaluation (the clock does not move here: that one is not due for 10 s).
TEST(PlacementService, AWorkerThatRegistersWakesPlacementForTheJobsWaiting) {
  PlacementFixture f;
  auto submitted = f.svc->submit_job(spec(""));
  ASSERT_TRUE(submitted);
  const int64_t id = submitted->id;
  ASSERT_TRUE(f.db->write([](store::WriteTxn&) { return Status{}; }));  // the submit's hook ran
  f.placement->tick();  // the new job, then the first periodic re-evaluation
  ASSERT_EQ(f.job(id).state, store::JobState::queued);
  EXPECT_NE(f.placement_of(id)["reason"].get<std::string>().find("no option can run this job"), std::string::npos);

  const int wakes = f.wakes.load();
  const int64_t w = f.add_worker({});
  EXPECT_GT(f.wakes.load(), wakes) << "a registration wakes the placement thread";
  f.placement->tick();
  EXPECT_EQ(f.job(id).state, store::JobState::placed);
  EXPECT_EQ(f.placement_of(id)["chosen"]["gpu"], "cpu");
  EXPECT_EQ(f.lease(w), id);
  // Decided before placement saw the fleet: no `unplaceable` event before its `placed`.
  const auto detail = f.svc->get_job(id);  // held: a range over a temporary's member would dangle
  ASSERT_TRUE(detail);
  for (const auto& e : detail->events) EXPECT_NE(e.type, "unplaceable") << e.detail_json;
}

// With no worker and no Slurm partition, a job decided in the first placement.reevaluate_s after
// start holds its `unplaceable` event; the first pass after that writes it, once per job (jobs of
// one kind included), while a job decided with a worker known gets its event at once.
TEST(PlacementService, BeforeTheFleetIsSeenTheUnplaceableEventWaitsForThePassAfterTheGrace) {
  PlacementFixture f;  // started now: placement.reevaluate_s is 10 s
  const std::string h100 = spec(R"(,"resources":{"gpu":"H100"})");
  const int64_t first = f.submit(h100), second = f.submit(h100);
  auto unplaceable_events = [&f](int64_t id) {
    int n = 0;
    const auto detail = f.svc->get_job(id);
    if (detail)
      for (const auto& e : detail->events) n += e.type == "unplaceable";
    return n;
  };
  for (int64_t id : {first, second}) {
    EXPECT_EQ(f.job(id).state, store::JobState::queued);
    EXPECT_NE(f.placement_of(id)["reason"].get<std::string>().find("no option can run this job"), std::string::npos)
        << "the stored document says why at once";
    EXPECT_EQ(unplaceable_events(id), 0);
  }
  f.clock.advance_ms(9'999);
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(unplaceable_events(first), 0);
  f.clock.advance_ms(1);
  ASSERT_TRUE(f.placement->reevaluate());
  ASSERT_TRUE(f.placement->reevaluate());
  for (int64_t id : {first, second}) EXPECT_EQ(unplaceable_events(id), 1) << "job " << id;
  // The fleet is seen now: a new job nothing can run has its event at once.
  const int64_t third = f.submit(h100);
  EXPECT_EQ(unplaceable_events(third), 1);

  // Within the grace, but with a worker registered: the fleet is seen, the event is not held.
  PlacementFixture g;
  g.add_worker({});
  const int64_t at_once = g.submit(h100);
  int n = 0;
  const auto at_once_detail = g.svc->get_job(at_once);
  ASSERT_TRUE(at_once_detail);
  for (const auto& e : at_once_detail->events) n += e.type == "unplaceable";
  EXPECT_EQ(n, 1);
}

// A worker marked lost (its lease expired) that asks for work again is back: placement is woken
// and the job that waited for a worker is placed on it.
TEST(PlacementService, AWorkerThatComesBackWakesPlacement) {
  PlacementFixture f;
  const int64_t w = f.add_worker({});
  const int64_t id = f.submit(spec(""));
  ASSERT_EQ(f.lease(w), id);
  f.clock.advance_ms(61'000);  // no heartbeat for longer than the lease timeout
  ASSERT_EQ(*f.svc->expire_leases(), 1);
  f.placement->tick();  // the job is queued again and nothing can run it: its only worker is lost
  ASSERT_EQ(f.job(id).state, store::JobState::queued);
  auto workers = f.db->list_workers();
  ASSERT_TRUE(workers && workers->size() == 1);
  EXPECT_EQ((*workers)[0].state, store::WorkerState::lost);

  const int wakes = f.wakes.load();
  EXPECT_EQ(f.lease(w), std::nullopt);  // the worker asks again: it is back; the job is not placed yet
  // Changes commit in order: once this one has, so has the worker's return (and its hook ran).
  ASSERT_TRUE(f.db->write([](store::WriteTxn&) { return Status{}; }));
  EXPECT_GT(f.wakes.load(), wakes) << "a worker coming back wakes the placement thread";
  f.placement->tick();  // not the periodic re-evaluation: the clock has not moved since the last
  EXPECT_EQ(f.job(id).state, store::JobState::placed);
  EXPECT_EQ(f.lease(w), id);
}

// A pass that fails is logged with what failed — here a queued job whose stored spec cannot be
// read — and the other jobs of the pass are decided all the same.
TEST(PlacementService, AFailingPassIsLoggedWithWhatFailed) {
  PlacementFixture f;
  f.add_worker({});
  auto broken = f.db->write_value<int64_t>([&f](store::WriteTxn& txn) -> Expected<int64_t> {
    store::JobRow row;
    row.name = "broken";
    row.spec_json = "{\"model\":";
    row.created_ms = row.updated_ms = f.clock.now_ms();
    return txn.insert_job(row);
  });
  ASSERT_TRUE(broken);
  auto good = f.svc->submit_job(spec(""));
  ASSERT_TRUE(good);
  f.placement->tick();  // the periodic re-evaluation: every queued job
  EXPECT_EQ(f.job(good->id).state, store::JobState::placed);
  EXPECT_EQ(f.log.count({"placement: re-evaluation failed:", "job " + std::to_string(*broken) + ":"}), 1u)
      << ::testing::PrintToString(f.log.lines());
  // The same failure on the next passes is not written again at every tick.
  f.clock.advance_ms(10'000);
  f.placement->tick();
  EXPECT_EQ(f.log.count({"placement: re-evaluation failed"}), 1u);
}

// Lease expiry runs on the daemon's ticker: a pass that fails (here: the store is closed) is
// logged, not dropped.
TEST(PlacementService, AFailedLeaseExpiryPassIsLogged) {
  PlacementFixture f;
  f.db->close();
  f.svc->tick();
  EXPECT_EQ(f.log.count({"lease expiry failed: unavailable"}), 1u) << ::testing::PrintToString(f.log.lines());
}

// A worker whose GPU jobctl's table does not know is warned about (the registration's and the
// worker list's warnings) and still used: a `gpu: any` job is placed on it, timed at the table's
// least favourable figures (cost::unknown_gpu_spec), and leased to it.
TEST(PlacementService, AnUnknownGpuIsWarnedAboutAndTakesGpuAnyJobsAtTheConservativeFigures) {
  PlacementFixture f;
  const std::string unknown = "Acme Tensor X1";
  ASSERT_EQ(cost::identify_gpu(unknown, 48), nullptr) << "the table learnt this name: pick another";
  const int64_t w = f.add_worker({{unknown, 49152}, {unknown, 49152}});
  auto workers = f.svc->list_workers();
  ASSERT_TRUE(workers);
  ASSERT_EQ(workers->size(), 1u);
  const json listed = http::worker_json(workers->front());
  ASSERT_EQ(listed["warnings"].size(), 1u) << listed.dump(2);  // one per model, not per device
  EXPECT_NE(listed["warnings"][0].get<std::string>().find("'Acme Tensor X1' (49152 MiB) is not in jobctl's GPU table"),
            std::string::npos)
      << listed.dump(2);
  jobs::WorkerCapabilities known;
  known.gpus = {{"Tesla V100-SXM2-16GB", 16384}};
  EXPECT_TRUE(jobs::worker_warnings(known).empty());

  const int64_t id = f.submit(spec(R"(,"resources":{"gpu":"any"})"));
  const json p = f.placement_of(id);
  ASSERT_TRUE(p["chosen"].is_object()) << p.dump(2);
  EXPECT_EQ(p["chosen"]["option"], "local");
  EXPECT_EQ(p["chosen"]["gpu"], unknown);
  // By hand: the slowest FP32 peak of the table's GPU rows, at the default efficiency.
  double slowest_fp32 = 1e9;
  for (const auto& g : cost::gpu_specs())
    if (g.family != "cpu") slowest_fp32 = std::min(slowest_fp32, g.fp32_tflops);
  auto job_spec = train::parse_job_spec(f.job(id).spec_json);
  ASSERT_TRUE(job_spec);
  const double flops = cost::workload_from_spec(*job_spec, train::model_stats(*job_spec)).training_flops;
  EXPECT_NEAR(p["chosen"]["estimated_hours"].get<double>(),
              flops / (slowest_fp32 * 1e12 * cost::default_efficiency(unknown, "mlp") * 3600), 1e-9);
  EXPECT_EQ(f.lease(w), id);
}

// A machine that registers again (the same machine_id: its worker was killed and restarted)
// replaces its older worker at once: the job the old one held is requeued with the reason, its
// owned-GPU billing ends at the new registration (not a lease timeout later), and the old entry
// is gone, not active.
TEST(PlacementService, AMachineThatRegistersAgainReleasesItsOldWorkersLeasesAtOnce) {
  PlacementFixture f;
  auto register_on = [&f](const std::string& machine) {
    return f.add_worker({{"Tesla V100-SXM2-16GB", 16384}}, {}, false, machine);
  };
  const int64_t old_worker = register_on("machine-1:box");
  const int64_t other = register_on("machine-2:box");  // another machine: untouched
  const int64_t id = f.submit(spec(R"(,"resources":{"gpu":"V100"})"));
  ASSERT_EQ(f.lease(old_worker), id);
  const int64_t leased_ms = f.clock.now_ms();
  f.clock.advance_ms(5'000);
  const int64_t again_ms = f.clock.now_ms();
  const int64_t new_worker = register_on("machine-1:box");

  const store::JobRow job = f.job(id);
  EXPECT_NE(job.state, store::JobState::running);
  EXPECT_FALSE(job.worker_id.has_value());
  EXPECT_EQ(job.recoveries, 1);
  auto detail = f.svc->get_job(id);
  ASSERT_TRUE(detail);
  bool said = false;
  for (const auto& ev : detail->events)
    said |= ev.type == "preempted" &&
            ev.detail_json.find("worker " + std::to_string(old_worker) + "'s machine (machine-1:box) registered again as worker " +
                                std::to_string(new_worker)) != std::string::npos;
  EXPECT_TRUE(said) << "no preempted event naming the re-registration";

  auto workers = f.svc->list_workers();
  ASSERT_TRUE(workers);
  std::map<int64_t, store::WorkerState> state;
  for (const auto& w : *workers) state[w.row.id] = w.row.state;
  EXPECT_EQ(state[old_worker], store::WorkerState::gone);
  EXPECT_EQ(state[other], store::WorkerState::active);
  EXPECT_EQ(state[new_worker], store::WorkerState::active);

  // Billing of the old lease ended when the machine came back: 5 s of one V100, not more.
  f.clock.advance_ms(60'000);
  auto rows = f.db->ledger_rows(0, f.clock.now_ms());
  ASSERT_TRUE(rows);
  int found = 0;
  for (const auto& r : *rows) {
    if (r.resource.rfind("local:" + std::to_string(old_worker) + ":", 0) != 0) continue;
    ++found;
    EXPECT_EQ(r.start_ms, leased_ms);
    EXPECT_EQ(r.end_ms, again_ms);
    EXPECT_EQ(r.billed_seconds, 5);
    EXPECT_FALSE(r.open);
  }
  EXPECT_EQ(found, 1);
  // The job runs again, on the machine's new worker; the old one, should it still ask, gets nothing.
  ASSERT_TRUE(f.placement->reevaluate());
  std::promise<Expected<std::optional<jobs::LeaseGrant>>> asked;
  f.svc->lease(old_worker, 0, [&asked](Expected<std::optional<jobs::LeaseGrant>> r) { asked.set_value(std::move(r)); });
  auto refused = asked.get_future().get();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::conflict);
  EXPECT_EQ(f.lease(new_worker), id);
}

}  // namespace
}  // namespace jobctl::daemon::testing

namespace jobctl::daemon::testing {
namespace {

// Reservations through the placement service: a 2-GPU job waiting behind a 1-GPU job on a 2-GPU
// worker is reserved there from the running job's lease plus its estimate; its document, reason
// and a `reserved` event say so, and expected_start() answers the same time.
TEST(PlacementService, AWideJobWaitingForABusyWorkerIsReservedWhereItsRunningJobEnds) {
  PlacementFixture f;
  placement::StartBoard board;
  f.placement->set_start_board(board);
  const int64_t w = f.add_worker({{"Tesla V100-SXM2-16GB", 16384}, {"Tesla V100-SXM2-16GB", 16384}}, {}, true);
  auto command = [](int gpus) {
    return json{{"command", {"/bin/true"}},
                {"estimate", {{"hours", 0.5}, {"gpu", "V100"}}},
                {"resources", {{"gpu", "V100"}, {"gpus", gpus}}}}
        .dump();
  };
  const int64_t running = f.submit(command(1));
  const int64_t leased_at = f.clock.now_ms();
  ASSERT_EQ(f.lease(w), running);
  const double hours = f.job(running).chosen->estimated_hours;
  f.clock.advance_ms(1000);
  const int64_t wide = f.submit(command(2));
  ASSERT_EQ(f.job(wide).state, store::JobState::placed) << f.placement_of(wide).dump(2);
  f.placement->tick();

  const int64_t start = leased_at + static_cast<int64_t>(hours * 3.6e6);
  EXPECT_EQ(f.placement->expected_start(wide), start);
  EXPECT_FALSE(f.placement->expected_start(running));  // running: not waiting
  const json doc = f.placement_of(wide);
  EXPECT_EQ(doc["reservation"]["worker_id"], w) << doc.dump(2);
  EXPECT_EQ(doc["reservation"]["start_ms"], start);
  EXPECT_NE(doc["reason"].get<std::string>().find("reserved worker " + std::to_string(w)), std::string::npos)
      << doc["reason"];
  EXPECT_NEAR(doc["chosen"]["queue_wait_hours"].get<double>(), (start - f.clock.now_ms()) / 3.6e6, 1e-6);
  auto d = f.svc->get_job(wide);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->events.back().type, "reserved");

  // The running job goes past its estimate: an `overrun` event on it names the job planned there,
  // once, and it is not stopped.
  f.clock.advance_ms(start - f.clock.now_ms() + 60'000);
  f.placement->tick();
  f.placement->tick();
  auto over = f.svc->get_job(running);
  ASSERT_TRUE(over);
  int overruns = 0;
  for (const auto& e : over->events) {
    if (e.type != "overrun") continue;
    ++overruns;
    const json detail = json::parse(e.detail_json);
    EXPECT_EQ(detail["waiting_jobs"], json::array({wide})) << detail.dump();
    EXPECT_EQ(detail["worker_id"], w) << detail.dump();
    EXPECT_NE(detail.value("reason", "").find("(it is not stopped)"), std::string::npos) << detail.dump();
  }
  EXPECT_EQ(overruns, 1) << "noted once per lease";
  EXPECT_EQ(f.job(running).state, store::JobState::placed);
}

}  // namespace
}  // namespace jobctl::daemon::testing
