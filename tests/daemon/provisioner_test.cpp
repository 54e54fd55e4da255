// The provisioner (daemon/provisioning/provisioner.h) driven pass by pass without sockets:
// a placed cloud job gets an instance (a gang as many as its nodes, launched together in one
// zone, or none), its time is billed per job, idle and never-booted
// instances are stopped, unknown instances are adopted and vanished ones ended, notices are
// recorded, a lost instance's lease is released, and an offer that cannot launch is set aside so
// placement chooses again. The provider is an in-memory cloud (the real drivers are tested in
// tests/cloud and end to end against jobctl-cloudsim in tests/e2e/spot_interruption_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <future>
#include <map>
#include <set>

#include "daemon/provisioning/provisioner.h"
#include "tests/daemon/placement_support.h"

namespace jobctl::daemon::testing {
namespace {

using nlohmann::json;
using provisioning::CloudSettings;
using provisioning::Provisioner;

// A cloud in memory: what the provider interface promises, nothing more.
class MemoryCloud final : public cloud::Provider {
 public:
  explicit MemoryCloud(const Clock& clock) : clock_(clock) {}

  std::string_view kind() const override { return "sim"; }
  Expected<std::vector<cost::Offer>> list_offers() override { return std::vector<cost::Offer>{}; }
  Expected<cloud::Instance> launch(const cloud::LaunchRequest& r) override {
    ++launch_calls;
    if (refuse_calls.count(launch_calls)) return make_error(ErrorCode::unavailable, "InsufficientInstanceCapacity");
    if (refuse_launches > 0) {
      --refuse_launches;
      return make_error(ErrorCode::unavailable, "no spot capacity in " + r.offer.region);
    }
    cloud::Instance i;
    i.id = "i-" + std::to_string(++next_id_);
    i.instance_type = r.offer.instance_type;
    i.region = r.offer.region;
    i.zone = r.offer.zone;
    i.spot = r.spot;
    i.state = "running";
    i.launched_ms = clock_.now_ms();
    i.usd_per_hour = r.spot && r.offer.spot_usd_per_hour ? *r.offer.spot_usd_per_hour : r.offer.on_demand_usd_per_hour;
    instances[i.id] = Entry{i, r.tag, r.server_url, r.for_job};
    return i;
  }
  Status terminate(const std::string& id) override {
    terminated.push_back(id);
    if (auto it = instances.find(id); it != instances.end()) it->second.instance.state = "terminated";
    return {};
  }
  Expected<std::vector<cloud::Instance>> describe(const std::string& tag) override {
    if (unreachable) return make_error(ErrorCode::unavailable, "cloud unreachable");
    std::vector<cloud::Instance> out;
    for (const auto& [id, e] : instances)
      if (e.tag == tag) out.push_back(e.instance);
    return out;
  }
  Expected<std::vector<cloud::InterruptionNotice>> interruptions(const std::string&, int64_t since_ms) override {
    std::vector<cloud::InterruptionNotice> out;
    for (const auto& n : notices)
      if (n.notice_ms >= since_ms) out.push_back(n);
    return out;
  }

  struct Entry {
    cloud::Instance instance;
    std::string tag;
    std::string server;
    int64_t for_job = 0;
  };
  std::map<std::string, Entry> instances;
  std::vector<cloud::InterruptionNotice> notices;
  std::vector<std::string> terminated;
  int refuse_launches = 0;
  std::set<int> refuse_calls;  // launch calls (1 the first) refused
  int launch_calls = 0;
  bool unreachable = false;

 private:
  const Clock& clock_;
  int next_id_ = 0;
};

// The provider the provisioner owns: a view of a MemoryCloud that outlives it, so that a test can
// replace the provisioner (a restarted daemon) over the same cloud.
class CloudView final : public cloud::Provider {
 public:
  explicit CloudView(MemoryCloud& c) : c_(c) {}
  std::string_view kind() const override { return c_.kind(); }
  Expected<std::vector<cost::Offer>> list_offers() override { return c_.list_offers(); }
  Expected<cloud::Instance> launch(const cloud::LaunchRequest& r) override { return c_.launch(r); }
  Status terminate(const std::string& id) override { return c_.terminate(id); }
  Expected<std::vector<cloud::Instance>> describe(const std::string& tag) override { return c_.describe(tag); }
  Expected<std::vector<cloud::InterruptionNotice>> interruptions(const std::string& tag, int64_t since) override {
    return c_.interruptions(tag, since);
  }

 private:
  MemoryCloud& c_;
};

placement::PlacementSettings cloud_placement() {
  placement::PlacementSettings s;
  s.cloud_provider = "sim";
  s.clouds = {"aws"};
  return s;
}

struct ProvisionerFixture : PlacementFixture {
  explicit ProvisionerFixture(provisioning::CloudSettings cs = settings(),
                              placement::PlacementSettings ps = cloud_placement())
      : PlacementFixture(std::move(ps)), memory(clock), cloud(&memory) {
    restart(std::move(cs));
  }
  // A new provisioner over the same store and cloud, as a restarted daemon builds it.
  void restart(provisioning::CloudSettings cs = settings()) {
    prov.reset();
    prov = std::make_unique<provisioning::Provisioner>(*db, clock, *svc, *placement, std::make_unique<CloudView>(memory),
                                         std::move(cs));
    prov->set_server_url("http://127.0.0.1:8080");
  }
  static provisioning::CloudSettings settings() {
    provisioning::CloudSettings s;
    s.provider = "sim";
    s.tag = "test";
    s.idle_timeout_s = 60;
    s.boot_timeout_s = 600;
    s.launch_attempts = 2;
    s.unavailable_cooldown_s = 600;
    return s;
  }
  provisioning::ProvisionerPass pass() {
    auto p = prov->run_pass();
    EXPECT_TRUE(p) << (p ? "" : p.error().message);
    return p ? *p : provisioning::ProvisionerPass{};
  }
  std::vector<store::InstanceRow> rows() {
    auto r = db->list_instances();
    EXPECT_TRUE(r);
    return r ? *r : std::vector<store::InstanceRow>{};
  }
  std::vector<std::string> event_types(int64_t job) {
    std::vector<std::string> out;
    auto d = svc->get_job(job);
    EXPECT_TRUE(d);
    if (d)
      for (const auto& e : d->events) out.push_back(e.type);
    return out;
  }
  // The worker an instance boots: registers with its instance, as jobctl-worker does.
  int64_t boot(const std::string& instance_id, bool spot = true) {
    return add_worker({{"Tesla V100-SXM2-16GB", 16384}},
                      jobs::WorkerInstance{instance_id, "sim", "p3.2xlarge", spot});
  }
  int64_t spot_job() { return submit(mlp_spec(R"(,"resources":{"gpu":"V100"})")); }
  // A spot job, the instance launched for it, and the worker that instance booted, holding the job.
  struct RunningSpotJob {
    int64_t job = 0;
    std::string instance_id;
    int64_t worker = 0;
  };
  RunningSpotJob running_spot_job() {
    RunningSpotJob r;
    r.job = spot_job();
    pass();
    const auto launched = rows();
    EXPECT_EQ(launched.size(), 1u);
    if (launched.empty()) return r;
    r.instance_id = launched[0].id;
    r.worker = boot(r.instance_id);
    EXPECT_EQ(lease(r.worker), r.job);
    return r;
  }

  MemoryCloud memory;
  MemoryCloud* cloud;
  std::unique_ptr<provisioning::Provisioner> prov;
};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(Provisioner, LaunchesOneInstanceForAPlacedSpotJobAndBillsItsTimeToTheJob) {
  ProvisionerFixture f;
  const int64_t job = f.spot_job();
  ASSERT_EQ(f.placement_of(job)["chosen"]["option"], "spot");
  auto p = f.pass();
  EXPECT_EQ(p.launched, 1);
  auto rows = f.rows();
  ASSERT_EQ(rows.size(), 1u);
  const store::InstanceRow r = rows[0];
  EXPECT_EQ(r.instance_type, "p3.2xlarge");
  EXPECT_TRUE(r.spot);
  EXPECT_EQ(r.job_id, job);
  EXPECT_GT(r.usd_per_hour, 0);
  EXPECT_LT(r.usd_per_hour, r.on_demand_usd_per_hour);
  EXPECT_EQ(f.cloud->instances.at(r.id).tag, "test");
  EXPECT_EQ(f.cloud->instances.at(r.id).server, "http://127.0.0.1:8080");
  EXPECT_TRUE(contains(f.event_types(job), "instance_launched"));

  // While it boots, the job waits for it: no second launch.
  f.clock.advance_ms(30'000);
  EXPECT_EQ(f.pass().launched, 0);

  // Its worker registers and takes the job; an hour later the ledger holds boot + run time.
  const int64_t worker = f.boot(r.id);
  ASSERT_EQ(f.lease(worker), job);
  f.clock.advance_ms(3'600'000);
  f.pass();
  auto ledger = f.ledger->rows(0, f.clock.now_ms() + 1);
  ASSERT_TRUE(ledger);
  ASSERT_EQ(ledger->size(), 1u);
  const auto& e = (*ledger)[0];
  EXPECT_EQ(e.entry.resource, "instance:" + r.id);
  EXPECT_EQ(e.entry.kind, "spot");
  EXPECT_EQ(e.entry.job_id, job);
  EXPECT_EQ(e.billed_seconds, 3630);  // launch to now, boot included
  EXPECT_NEAR(e.usd, 3630 * r.usd_per_hour / 3600, 1e-9);
  EXPECT_GT(e.on_demand_usd, e.usd);  // the spend report's savings

  auto views = f.prov->instances();
  ASSERT_TRUE(views);
  ASSERT_EQ(views->size(), 1u);
  EXPECT_EQ((*views)[0].worker_id, worker);
  EXPECT_EQ((*views)[0].running_job_id, job);
  EXPECT_NEAR((*views)[0].billed_usd, e.usd, 1e-9);
}

TEST(Provisioner, LaunchesInTheZoneItPricedAndBillsThatZonesPrice) {
  // One instance type in two zones of a region; the second zone's spot market is the cheaper.
  jobctl::testing::TempDir catalog_dir;
  const std::string catalog = catalog_dir.file("aws_zones.csv");
  {
    std::ofstream out(catalog);
    out << "Cloud,InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuMemoryMiB,Price,SpotPrice,"
           "Region,AvailabilityZone\n"
           "aws,p3.2xlarge,V100,1,8,61,16384,3.06,0.4798,us-east-2,use2-az1\n"
           "aws,p3.2xlarge,V100,1,8,61,16384,3.06,0.3635,us-east-2,use2-az2\n";
  }
  placement::PlacementSettings settings = cloud_placement();
  settings.seed_catalog = false;
  settings.catalog_files = {{catalog, "aws"}};
  ProvisionerFixture f(ProvisionerFixture::settings(), std::move(settings));
  const int64_t job = f.spot_job();
  const json chosen = f.placement_of(job)["chosen"];
  ASSERT_EQ(chosen["option"], "spot");
  ASSERT_EQ(chosen["zone"], "use2-az2");
  ASSERT_EQ(f.pass().launched, 1);
  const auto rows = f.rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].zone, "use2-az2");
  EXPECT_DOUBLE_EQ(rows[0].usd_per_hour, 0.3635);
  EXPECT_DOUBLE_EQ(rows[0].usd_per_hour, chosen["usd_per_hour"].get<double>());
  EXPECT_EQ(f.cloud->instances.at(rows[0].id).instance.zone, "use2-az2");
}

// A command job (the user's own program) gets an instance of its own, launched for it: its worker
// runs that job alone with command jobs allowed, so a user's program never shares a machine with
// another job. The instance is never counted as free for other jobs, and it is stopped as soon as
// its job is over.
TEST(Provisioner, ACommandJobGetsAnInstanceOfItsOwnStoppedWhenItsJobEnds) {
  ProvisionerFixture f;
  const int64_t command = f.submit(
      R"({"name":"own","command":["python3","train.py"],"estimate":{"hours":1,"gpu":"V100"},"resources":{"gpu":"V100"}})");
  ASSERT_EQ(f.placement_of(command)["chosen"]["option"], "spot");
  ASSERT_EQ(f.pass().launched, 1);
  auto rows = f.rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows[0].dedicated);
  EXPECT_EQ(rows[0].job_id, command);
  EXPECT_EQ(f.cloud->instances.at(rows[0].id).for_job, command);
  const std::string own = rows[0].id;

  // A built-in job placed on the same kind while the command job's instance boots gets its own
  // instance: the booting one is not free for it.
  const int64_t other = f.spot_job();
  ASSERT_EQ(f.pass().launched, 1);
  ASSERT_EQ(f.rows().size(), 2u);
  // Nor does the command job get a second one while its own boots.
  f.clock.advance_ms(30'000);
  EXPECT_EQ(f.pass().launched, 0);

  // Its worker registers as the instance's, for that job, running commands; the built-in job's
  // instance's worker never gets the command job, nor the command job's worker the other job.
  jobs::WorkerRegistration reg;
  reg.name = "own";
  reg.capabilities.gpus = {{"Tesla V100-SXM2-16GB", 16384}};
  reg.capabilities.cpu_cores = 4;
  reg.capabilities.memory_mb = 16384;
  reg.capabilities.commands = true;
  reg.capabilities.instance = jobs::WorkerInstance{own, "sim", "p3.2xlarge", true, command};
  auto registered = f.svc->register_worker(reg);
  ASSERT_TRUE(registered) << registered.error().message;
  const int64_t own_worker = registered->worker_id;
  std::string shared;
  for (const auto& r : f.rows())
    if (r.id != own) shared = r.id;
  const int64_t shared_worker = f.boot(shared);
  EXPECT_EQ(f.lease(shared_worker), other);
  EXPECT_EQ(f.lease(own_worker), command);

  // The command job ends: its instance stops at the next pass, with no idle timeout.
  auto done = f.svc->complete(command, jobs::CompletionReport{{own_worker, 1}, R"({"steps":1})"});
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(f.pass().terminated, 1);
  EXPECT_EQ(f.cloud->terminated, std::vector<std::string>{own});
}

TEST(Provisioner, AnIdleInstanceIsStoppedAfterTheIdleTimeoutAndItsIdleTimeIsNobodys) {
  ProvisionerFixture f;
  const auto [job, id, worker] = f.running_spot_job();
  ASSERT_FALSE(::testing::Test::HasFailure());
  f.clock.advance_ms(10'000);
  f.pass();
  auto done = f.svc->complete(job, jobs::CompletionReport{{worker, 1}, R"({"final_loss":0.1})"});
  ASSERT_TRUE(done) << done.error().message;

  f.clock.advance_ms(20'000);
  f.pass();  // the job's segment closes; an idle one opens
  EXPECT_TRUE(f.rows()[0].idle_since_ms.has_value());
  f.clock.advance_ms(30'000);
  EXPECT_EQ(f.pass().terminated, 0);  // idle 30 s < 60 s
  f.clock.advance_ms(31'000);
  EXPECT_EQ(f.pass().terminated, 1);
  EXPECT_EQ(f.cloud->terminated, std::vector<std::string>{id});
  f.clock.advance_ms(2'000);
  EXPECT_EQ(f.pass().ended, 1);
  const auto row = f.rows()[0];
  EXPECT_EQ(row.state, "terminated");
  ASSERT_TRUE(row.ended_ms);

  auto ledger = f.ledger->rows(0, f.clock.now_ms() + 1);
  ASSERT_TRUE(ledger);
  ASSERT_EQ(ledger->size(), 2u);
  EXPECT_EQ((*ledger)[0].entry.job_id, job);
  EXPECT_EQ((*ledger)[1].entry.job_id, 0);
  EXPECT_EQ((*ledger)[1].entry.end_ms, *row.ended_ms);
  int64_t billed = 0;
  for (const auto& l : *ledger) billed += l.billed_seconds;
  EXPECT_EQ(billed, (*row.ended_ms - row.launched_ms) / 1000);
  // Ended rows are not accrued again.
  f.clock.advance_ms(600'000);
  f.pass();
  auto again = f.ledger->rows(0, f.clock.now_ms() + 1);
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)[1].entry.end_ms, *row.ended_ms);
}

TEST(Provisioner, AnInstanceWhoseWorkerNeverRegistersIsStoppedAfterTheBootTimeout) {
  ProvisionerFixture f;
  f.spot_job();
  f.pass();
  f.clock.advance_ms(599'000);
  EXPECT_EQ(f.pass().terminated, 0);
  f.clock.advance_ms(2'000);
  EXPECT_EQ(f.pass().terminated, 1);
  EXPECT_NE(f.rows()[0].reason.find("did not register"), std::string::npos) << f.rows()[0].reason;
}

TEST(Provisioner, ReconciliationAdoptsUnknownInstancesAndEndsVanishedOnes) {
  ProvisionerFixture f;
  // An instance with our tag that no row knows (a daemon died between launch and record), one
  // with another tag (not ours: never touched), and a row the cloud no longer reports.
  cloud::Instance leaked;
  leaked.id = "i-leaked";
  leaked.instance_type = "p3.2xlarge";
  leaked.region = "us-east-1";
  leaked.spot = false;
  leaked.state = "running";
  leaked.launched_ms = f.clock.now_ms() - 120'000;
  f.cloud->instances["i-leaked"] = {leaked, "test", ""};
  cloud::Instance other = leaked;
  other.id = "i-other";
  f.cloud->instances["i-other"] = {other, "someone-else", ""};
  store::InstanceRow gone;
  gone.id = "i-gone";
  gone.provider = "sim";
  gone.instance_type = "p3.2xlarge";
  gone.state = "running";
  gone.launched_ms = f.clock.now_ms() - 60'000;
  ASSERT_TRUE(f.db->write([gone](store::WriteTxn& txn) { return txn.put_instance(gone); }));

  EXPECT_FALSE(f.prov->reconciled());
  auto p = f.pass();
  EXPECT_TRUE(f.prov->reconciled());
  EXPECT_EQ(p.adopted, 1);
  EXPECT_EQ(p.ended, 1);
  std::map<std::string, store::InstanceRow> by_id;
  for (auto& r : f.rows()) by_id[r.id] = r;
  ASSERT_EQ(by_id.size(), 2u);
  EXPECT_EQ(by_id["i-leaked"].state, "running");
  EXPECT_EQ(by_id["i-leaked"].launched_ms, leaked.launched_ms);
  EXPECT_NEAR(by_id["i-leaked"].usd_per_hour, 3.06, 1e-9);  // the catalog's on-demand price
  EXPECT_NE(by_id["i-leaked"].reason.find("adopted"), std::string::npos);
  EXPECT_EQ(by_id["i-gone"].state, "terminated");
  // The adopted instance is watched like any other: idle, then stopped.
  f.clock.advance_ms(1'000);
  f.boot("i-leaked", false);
  f.pass();
  f.clock.advance_ms(61'000);
  EXPECT_EQ(f.pass().terminated, 1);
  EXPECT_EQ(f.cloud->terminated, std::vector<std::string>{"i-leaked"});
  EXPECT_EQ(f.cloud->instances.at("i-other").instance.state, "running");
}

TEST(Provisioner, AnUnreachableProviderStopsThePassAndIsReported) {
  ProvisionerFixture f;
  f.spot_job();
  f.cloud->unreachable = true;
  auto p = f.prov->run_pass();
  ASSERT_FALSE(p);
  EXPECT_EQ(f.cloud->launch_calls, 0);  // nothing is launched blind
  EXPECT_FALSE(f.prov->reconciled());
  EXPECT_NE(f.prov->last_error().find("unreachable"), std::string::npos);
  f.cloud->unreachable = false;
  EXPECT_EQ(f.pass().launched, 1);
  EXPECT_TRUE(f.prov->last_error().empty());
}

TEST(Provisioner, RepeatedLaunchFailuresSetTheOfferAsideAndPlacementChoosesAgain) {
  ProvisionerFixture f;
  const int64_t job = f.spot_job();
  f.cloud->refuse_launches = 2;
  EXPECT_EQ(f.pass().launch_failures, 1);
  EXPECT_EQ(f.job(job).state, store::JobState::placed);  // tried again after the backoff
  // The next pass, at once, does not try the offer: the first pause is 1 to 2 s (jitter).
  const int calls = f.cloud->launch_calls;
  EXPECT_EQ(f.pass().launch_failures, 0);
  EXPECT_EQ(f.cloud->launch_calls, calls);
  f.clock.advance_ms(2000);
  EXPECT_EQ(f.pass().launch_failures, 1);
  EXPECT_EQ(f.job(job).state, store::JobState::queued);
  auto types = f.event_types(job);
  EXPECT_EQ(std::count(types.begin(), types.end(), "launch_failed"), 2);
  EXPECT_TRUE(contains(types, "unplaced"));
  // Placement now leaves p3.2xlarge's spot market out: the next choice is another offer.
  ASSERT_TRUE(f.placement->reevaluate());
  json p = f.placement_of(job);
  ASSERT_TRUE(p["chosen"].is_object()) << p.dump(2);
  EXPECT_FALSE(p["chosen"]["option"] == "spot" && p["chosen"]["instance_type"] == "p3.2xlarge") << p["chosen"];
  EXPECT_EQ(f.pass().launched, 1);
  // After the cool-down the spot market is back.
  f.clock.advance_ms(601'000);
  auto q = f.placement->quote(mlp_spec(R"(,"resources":{"gpu":"V100"})"));
  ASSERT_TRUE(q);
  EXPECT_EQ((*q)["chosen"]["option"], "spot");
}

TEST(Provisioner, ANoticeIsRecordedOnTheJobAndTheInstanceStoppedOnceItsJobIsHandedBack) {
  ProvisionerFixture f;
  const auto [job, id, worker] = f.running_spot_job();
  ASSERT_FALSE(::testing::Test::HasFailure());
  f.clock.advance_ms(5'000);
  f.cloud->notices.push_back({id, f.clock.now_ms(), f.clock.now_ms() + 120'000, "spot-interruption"});
  auto p = f.pass();
  EXPECT_EQ(p.notices, 1);
  EXPECT_EQ(p.terminated, 0);  // its worker still holds the job: it is checkpointing
  EXPECT_TRUE(contains(f.event_types(job), "spot_notice"));
  EXPECT_TRUE(f.rows()[0].notice_ms.has_value());
  EXPECT_EQ(f.pass().notices, 0);  // recorded once

  // The worker hands the job back (preempt): requeued, re-placed on spot; the noticed instance
  // is not counted as free, so a new one is launched, and the noticed one is stopped.
  auto pre = f.svc->preempt(job, jobs::PreemptionReport{{worker, 1}, "spot interruption notice"});
  ASSERT_TRUE(pre) << pre.error().message;
  ASSERT_TRUE(f.placement->reevaluate());
  ASSERT_EQ(f.job(job).state, store::JobState::placed);
  p = f.pass();
  EXPECT_EQ(p.terminated, 1);
  EXPECT_EQ(p.launched, 1);
  EXPECT_EQ(f.cloud->terminated, std::vector<std::string>{id});
}

// The usual order on a real cloud: the worker acts on the notice within a second and hands its
// job back before the provisioner's next pass reads the interruption feed. That pass records the
// notice and also closes the job's ledger segment on the instance; the notice must survive the
// second write of the row (it was once lost to it and recorded again on every later pass).
TEST(Provisioner, ANoticeAfterTheJobWasHandedBackIsRecordedOnceAndStopsTheInstance) {
  ProvisionerFixture f;
  const auto [job, id, worker] = f.running_spot_job();
  ASSERT_FALSE(::testing::Test::HasFailure());
  f.clock.advance_ms(5'000);
  f.cloud->notices.push_back({id, f.clock.now_ms(), f.clock.now_ms() + 120'000, "spot-interruption"});
  auto pre = f.svc->preempt(job, jobs::PreemptionReport{{worker, 1}, "spot interruption notice"});
  ASSERT_TRUE(pre) << pre.error().message;
  f.clock.advance_ms(1'000);
  auto p = f.pass();
  EXPECT_EQ(p.notices, 1);
  EXPECT_EQ(p.terminated, 1);  // noticed, and no job left on it
  ASSERT_TRUE(f.rows()[0].notice_ms.has_value());
  f.clock.advance_ms(1'000);
  EXPECT_EQ(f.pass().notices, 0);
  const auto types = f.event_types(job);
  EXPECT_EQ(std::count(types.begin(), types.end(), "spot_notice"), 1);
}

TEST(Provisioner, AJobOnAnInstanceThatEndedIsReleasedWithoutWaitingForTheLeaseTimeout) {
  ProvisionerFixture f;
  const auto [job, id, worker] = f.running_spot_job();
  ASSERT_FALSE(::testing::Test::HasFailure());
  // Reclaimed without a notice the worker could act on.
  f.cloud->instances.at(id).instance.state = "terminated";
  f.clock.advance_ms(1'000);
  auto p = f.pass();
  EXPECT_EQ(p.ended, 1);
  EXPECT_EQ(p.released, 1);
  const auto row = f.job(job);
  EXPECT_EQ(row.state, store::JobState::queued);
  EXPECT_EQ(row.recoveries, 1);
}

// Gangs on cloud instances: a catalog with one type in two zones (the second's spot market the
// cheaper), and a 2-node command job placed there.
struct CatalogDir {
  jobctl::testing::TempDir catalog_dir;  // built before the fixture that reads its catalog
};
struct GangFixture : CatalogDir, ProvisionerFixture {
  explicit GangFixture(provisioning::CloudSettings cs = settings(), int max_instances = 16)
      : ProvisionerFixture(std::move(cs), zones_placement(catalog_dir, max_instances)) {}
  static placement::PlacementSettings zones_placement(jobctl::testing::TempDir& dir, int max_instances) {
    const std::string catalog = dir.file("aws_zones.csv");
    std::ofstream(catalog)
        << "Cloud,InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuMemoryMiB,Price,SpotPrice,"
           "Region,AvailabilityZone\n"
           "aws,p3.2xlarge,V100,1,8,61,16384,3.06,0.4798,us-east-2,use2-az1\n"
           "aws,p3.2xlarge,V100,1,8,61,16384,3.06,0.3635,us-east-2,use2-az2\n";
    placement::PlacementSettings s = cloud_placement();
    s.seed_catalog = false;
    s.catalog_files = {{catalog, "aws"}};
    s.cloud_max_instances = max_instances;
    return s;
  }
  int64_t gang_job(int nodes = 2) {
    return submit(R"({"name":"ddp","command":["python3","train_ddp.py"],"estimate":{"hours":1,"gpu":"V100"},)"
                  R"("resources":{"gpu":"V100","nodes":)" +
                  std::to_string(nodes) + "}}");
  }
  // The worker an instance launched for `job` boots (jobctl-worker --for-job, commands allowed),
  // with the address the gang's other nodes reach it at.
  int64_t boot_for(const std::string& instance_id, int64_t job) {
    jobs::WorkerRegistration reg;
    reg.name = instance_id;
    reg.capabilities.gpus = {{"Tesla V100-SXM2-16GB", 16384}};
    reg.capabilities.cpu_cores = 4;
    reg.capabilities.memory_mb = 16384;
    reg.capabilities.commands = true;
    reg.capabilities.address = "10.0.0." + std::to_string(++booted);
    reg.capabilities.instance = jobs::WorkerInstance{instance_id, "sim", "p3.2xlarge", true, job};
    auto r = svc->register_worker(reg);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? r->worker_id : 0;
  }
  int booted = 0;
  // Workers that long-poll together, as a gang's nodes do; each one's grant.
  std::vector<std::optional<jobs::LeaseGrant>> lease_together(const std::vector<int64_t>& workers) {
    std::vector<std::future<Expected<std::optional<jobs::LeaseGrant>>>> asked;
    for (size_t i = 0; i < workers.size(); ++i) {
      auto p = std::make_shared<std::promise<Expected<std::optional<jobs::LeaseGrant>>>>();
      asked.push_back(p->get_future());
      svc->lease(workers[i], 10'000, [p](Expected<std::optional<jobs::LeaseGrant>> r) { p->set_value(std::move(r)); },
                 std::nullopt, i == 0 ? 41000 : 0);
    }
    std::vector<std::optional<jobs::LeaseGrant>> out;
    for (auto& f : asked) {
      if (f.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
        ADD_FAILURE() << "a node's lease was not answered";
        out.push_back(std::nullopt);
        continue;
      }
      auto r = f.get();
      out.push_back(r && *r ? std::optional<jobs::LeaseGrant>(std::move(**r)) : std::nullopt);
    }
    return out;
  }
  int count(int64_t job, const std::string& type) {
    const auto types = event_types(job);
    return static_cast<int>(std::count(types.begin(), types.end(), type));
  }
};

// A gang of two nodes placed on spot gets two instances in one pass, in the zone its placement
// priced, each launched for it alone; once both workers hold their nodes, each instance's time is
// billed to the job: one ledger segment per instance.
TEST(Provisioner, AGangGetsOneInstancePerNodeInThePricedZoneEachBilledToTheJob) {
  GangFixture f;
  const int64_t job = f.gang_job();
  const json chosen = f.placement_of(job)["chosen"];
  ASSERT_EQ(chosen["option"], "spot") << f.placement_of(job).dump(2);
  ASSERT_EQ(chosen["zone"], "use2-az2");
  EXPECT_NEAR(chosen["usd_per_hour"].get<double>(), 2 * 0.3635, 1e-9) << "two instances' price";
  auto p = f.pass();
  EXPECT_EQ(p.launched, 2);
  auto rows = f.rows();
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& r : rows) {
    EXPECT_TRUE(r.dedicated);
    EXPECT_EQ(r.job_id, job);
    EXPECT_EQ(r.zone, "use2-az2");
    EXPECT_DOUBLE_EQ(r.usd_per_hour, 0.3635);
    EXPECT_EQ(f.cloud->instances.at(r.id).for_job, job);
  }
  EXPECT_EQ(f.count(job, "instance_launched"), 2);
  // While they boot, the gang waits for them: no more launches.
  f.clock.advance_ms(30'000);
  EXPECT_EQ(f.pass().launched, 0);

  // Both workers register and lease the gang together.
  const int64_t w0 = f.boot_for(rows[0].id, job), w1 = f.boot_for(rows[1].id, job);
  const auto grants = f.lease_together({w0, w1});
  ASSERT_TRUE(grants[0] && grants[1]);
  ASSERT_TRUE(grants[0]->gang && grants[1]->gang);
  EXPECT_EQ(grants[0]->job_id, job);
  EXPECT_EQ(grants[1]->job_id, job);
  f.clock.advance_ms(3'600'000);
  f.pass();
  auto views = f.prov->instances();
  ASSERT_TRUE(views);
  for (const auto& v : *views) EXPECT_EQ(v.running_job_id, job) << v.row.id << ": each node's worker holds the job";
  auto ledger = f.ledger->rows(0, f.clock.now_ms() + 1);
  ASSERT_TRUE(ledger);
  std::set<std::string> billed;
  for (const auto& e : *ledger) {
    if (!e.entry.resource.starts_with("instance:")) continue;
    EXPECT_EQ(e.entry.job_id, job) << e.entry.resource;
    EXPECT_EQ(e.billed_seconds, 3630) << e.entry.resource << ": launch to now, boot included";
    billed.insert(e.entry.resource);
  }
  EXPECT_EQ(billed, (std::set<std::string>{"instance:" + rows[0].id, "instance:" + rows[1].id}));
  auto segments = f.db->ledger_rows_of_job(job);
  ASSERT_TRUE(segments);
  EXPECT_EQ(std::count_if(segments->begin(), segments->end(),
                          [](const store::LedgerRecord& e) { return e.resource.starts_with("instance:"); }),
            2);
}

// A gang's instances are launched all at once or not at all: none while fewer than its nodes fit
// under cloud.max_instances; when one launch of a pass fails, the others of that pass are
// terminated and the failure counted, and the next pass launches the whole gang again.
TEST(Provisioner, AGangIsLaunchedWholeOrNotAtAll) {
  provisioning::CloudSettings s = ProvisionerFixture::settings();
  s.max_instances = 3;
  GangFixture f(s, 3);
  f.spot_job();
  const int64_t gang = f.gang_job(3);
  ASSERT_EQ(f.placement_of(gang)["chosen"]["option"], "spot") << f.placement_of(gang).dump(2);
  auto p = f.pass();
  EXPECT_EQ(p.launched, 1) << "the single job's instance; the gang's three do not fit beside it";
  EXPECT_EQ(f.count(gang, "instance_launched"), 0);

  provisioning::CloudSettings wide = ProvisionerFixture::settings();
  wide.max_instances = 16;
  GangFixture g(wide);
  const int64_t job = g.gang_job(3);
  g.cloud->refuse_calls = {2};  // the second of the three launches fails
  p = g.pass();
  EXPECT_EQ(p.launch_failures, 1);
  EXPECT_EQ(p.launched, 1);
  EXPECT_EQ(p.terminated, 1);
  auto rows = g.rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(g.cloud->terminated, std::vector<std::string>{rows[0].id});
  EXPECT_EQ(rows[0].state, "shutting-down");
  EXPECT_EQ(g.count(job, "launch_failed"), 1);
  EXPECT_EQ(g.job(job).state, store::JobState::placed) << "one failure of launch_attempts (2)";
  g.clock.advance_ms(2000);  // the offer's backoff after a failed launch
  p = g.pass();
  EXPECT_EQ(p.launched, 3);
  EXPECT_EQ(p.launch_failures, 0);
  int live = 0;
  for (const auto& r : g.rows()) live += r.live() && r.state != "shutting-down" && r.state != "terminated";
  EXPECT_EQ(live, 3);
}

// A spot notice to one node's instance: that node gives the gang back, the gang stops (rank 0
// hands back after its checkpoint) and is queued again. The healthy node's instance waits for
// the gang's next placement (not stopped while the job is queued), is one of its nodes again, and
// only the noticed instance is replaced; it is stopped once its job left it.
TEST(Provisioner, AfterANoticeToOneNodeOnlyThatNodesInstanceIsReplaced) {
  GangFixture f;
  const int64_t job = f.gang_job();
  ASSERT_EQ(f.pass().launched, 2);
  const auto rows = f.rows();
  ASSERT_EQ(rows.size(), 2u);
  const int64_t w0 = f.boot_for(rows[0].id, job), w1 = f.boot_for(rows[1].id, job);
  const auto grants = f.lease_together({w0, w1});
  ASSERT_TRUE(grants[0] && grants[0]->gang && grants[1] && grants[1]->gang);
  const int64_t epoch = grants[0]->epoch;
  // Rank 1 is the second worker (rank 0 brought the port).
  ASSERT_EQ(grants[1]->gang->rank, 1);
  const std::string noticed = rows[1].id, healthy = rows[0].id;
  f.clock.advance_ms(5'000);
  f.cloud->notices.push_back({noticed, f.clock.now_ms(), f.clock.now_ms() + 120'000, "spot-interruption"});
  auto p = f.pass();
  EXPECT_EQ(p.notices, 1);
  EXPECT_EQ(f.count(job, "spot_notice"), 1);
  EXPECT_EQ(p.terminated, 0) << "rank 1's worker still holds its node: it is stopping";

  // Rank 1 gives its node back, then rank 0 after its checkpoint: the gang is queued again.
  auto given = f.svc->preempt(job, jobs::PreemptionReport{{w1, epoch}, "spot interruption notice"});
  ASSERT_TRUE(given) << given.error().message;
  auto back = f.svc->preempt(job, jobs::PreemptionReport{{w0, epoch}, "moved: gang node 1 was given back"});
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(f.job(job).state, store::JobState::queued);
  EXPECT_EQ(f.count(job, "node_given_back"), 1);
  f.clock.advance_ms(1'000);
  p = f.pass();  // before placement has placed it again
  EXPECT_EQ(p.terminated, 1);
  EXPECT_EQ(f.cloud->terminated, std::vector<std::string>{noticed});
  EXPECT_EQ(p.launched, 0);

  ASSERT_TRUE(f.placement->reevaluate());
  ASSERT_EQ(f.job(job).state, store::JobState::placed);
  ASSERT_EQ(f.placement_of(job)["chosen"]["zone"], "use2-az2");
  p = f.pass();
  EXPECT_EQ(p.launched, 1) << "the healthy node's instance is one of the two";
  EXPECT_EQ(p.terminated, 0);
  EXPECT_EQ(f.count(job, "instance_launched"), 3);
  std::string fresh;
  for (const auto& r : f.rows())
    if (r.id != noticed && r.id != healthy) fresh = r.id;
  ASSERT_FALSE(fresh.empty());
  const int64_t w2 = f.boot_for(fresh, job);
  const auto again = f.lease_together({w0, w2});
  ASSERT_TRUE(again[0] && again[1]) << "the gang is leased on the healthy instance and the new one";
  EXPECT_EQ(again[0]->job_id, job);
  EXPECT_TRUE(again[0]->gang.has_value());
}

TEST(Provisioner, NoMoreThanMaxInstancesRunAtOnce) {
  provisioning::CloudSettings s = ProvisionerFixture::settings();
  s.max_instances = 2;
  ProvisionerFixture f(s);
  for (int i = 0; i < 3; ++i) f.spot_job();
  EXPECT_EQ(f.pass().launched, 2);
  EXPECT_EQ(f.pass().launched, 0);
  EXPECT_EQ(f.rows().size(), 2u);
}

// The deadline policy also runs while a spot job runs (placement.reevaluate_s): a job that falls
// behind its deadline is flagged once, to move to on-demand at its next interruption.
TEST(Provisioner, ARunningSpotJobFallingBehindItsDeadlineIsFlaggedOnce) {
  ProvisionerFixture f;
  const int64_t job = f.submit(mlp_spec(R"(,"resources":{"gpu":"V100"},"placement":{"deadline_hours":2})"));
  ASSERT_EQ(f.placement_of(job)["chosen"]["option"], "spot");
  f.pass();
  ASSERT_EQ(f.rows().size(), 1u);
  const int64_t worker = f.boot(f.rows()[0].id);
  ASSERT_EQ(f.lease(worker), job);
  auto beat = [&] {
    auto r = f.svc->heartbeat(job, jobs::HeartbeatReport{{worker, 1}, R"({"step":1,"total_steps":1000})"});
    ASSERT_TRUE(r) << r.error().message;
  };
  beat();
  ASSERT_EQ(f.job(job).state, store::JobState::running);
  auto flagged = [&] {
    const auto types = f.event_types(job);
    return std::count(types.begin(), types.end(), "deadline_policy");
  };
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(flagged(), 0) << "on time: nothing to flag";

  // Nearly two hours later with 0.1% done: on-demand is the only way to make the deadline.
  f.clock.advance_ms(7'100'000);
  beat();
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(flagged(), 1);
  ASSERT_TRUE(f.placement->reevaluate());
  EXPECT_EQ(flagged(), 1) << "flagged once per job";
}

TEST(Provisioner, ARestartedDaemonReconcilesFromTheSameStore) {
  ProvisionerFixture f;
  const auto [job, id, worker] = f.running_spot_job();
  ASSERT_FALSE(::testing::Test::HasFailure());
  f.clock.advance_ms(10'000);
  f.pass();
  // The daemon restarts: a new provisioner over the same store and the same cloud. Nothing is
  // launched twice or adopted; the instance keeps its job and its bill continues from launch.
  f.restart();
  EXPECT_FALSE(f.prov->reconciled());
  f.clock.advance_ms(10'000);
  auto p = f.pass();
  EXPECT_TRUE(f.prov->reconciled());
  EXPECT_EQ(p.launched, 0);
  EXPECT_EQ(p.adopted, 0);
  EXPECT_EQ(f.cloud->launch_calls, 1);
  ASSERT_EQ(f.rows().size(), 1u);
  EXPECT_EQ(f.rows()[0].job_id, job);
  auto ledger = f.ledger->rows(0, f.clock.now_ms() + 1);
  ASSERT_TRUE(ledger);
  ASSERT_EQ(ledger->size(), 1u);
  EXPECT_EQ((*ledger)[0].billed_seconds, 20);
}

}  // namespace
}  // namespace jobctl::daemon::testing
