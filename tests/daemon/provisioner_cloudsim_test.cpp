// The provisioner (daemon/provisioning/provisioner.h) over the real jobctl-cloudsim, through the
// sim driver, with the AWS catalog of the shared data (../shared/data/catalog) on both sides:
// a spot job priced in one zone is launched in that zone and billed at that zone's price, and the
// ledger bills the instance for the lifetime the cloud reports, not the passes' clock.
//
// No worker boots here (the instances run `sleep`): the instance's time is its job's boot time,
// which is all the ledger needs. The daemon's clock is a manual one set to the real time before
// each pass, so placement and the provisioner run exactly when the test says.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "cloud/sim_provider.h"
#include "daemon/provisioning/provisioner.h"
#include "tests/daemon/placement_support.h"
#include "tests/support/poll.h"
#include "tests/support/server_process.h"
#include "tests/support/shared_data.h"

namespace jobctl::daemon::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kAwsCatalog = "catalog/aws_gpu_vms.csv";

int64_t real_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One zone's p3.2xlarge row of the catalog file, read the plain way (the figures the test expects
// come from the file, not from jobctl's catalog parser).
struct ZoneRow {
  std::string region, zone;
  double spot = 0;
};

std::vector<ZoneRow> p3_2xlarge_spot_rows(const std::string& path) {
  std::ifstream in(path);
  std::vector<ZoneRow> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("p3.2xlarge,")) continue;
    // The last four fields: Price, SpotPrice, Region, AvailabilityZone (no quotes among them).
    std::vector<std::string> tail;
    std::string rest = line;
    for (int i = 0; i < 4; ++i) {
      const size_t comma = rest.rfind(',');
      tail.insert(tail.begin(), rest.substr(comma + 1));
      rest.resize(comma);
    }
    if (tail[1].empty()) continue;  // no spot market in that zone
    out.push_back({tail[2], tail[3], std::stod(tail[1])});
  }
  return out;
}

provisioning::CloudSettings cloud_settings() {
  provisioning::CloudSettings s;
  s.provider = "sim";
  s.tag = "zone-test";
  s.idle_timeout_s = 600;
  s.boot_timeout_s = 600;
  return s;
}

placement::PlacementSettings aws_placement(const std::string& catalog) {
  placement::PlacementSettings s;
  s.cloud_provider = "sim";
  s.clouds = {"aws"};
  s.seed_catalog = false;
  s.catalog_files = {{catalog, "aws"}};
  return s;
}

TEST(ProvisionerOverCloudsim, SpotRunsAndIsBilledInTheZoneItWasPricedForForTheLifetimeTheCloudReports) {
  JOBCTL_NEED_SHARED_DATA(kAwsCatalog);
  const std::string catalog = jobctl::testing::shared_data(kAwsCatalog).string();

  // By hand from the file: the cheapest p3.2xlarge spot zone, and its region's first spot zone.
  const auto rows = p3_2xlarge_spot_rows(catalog);
  ASSERT_FALSE(rows.empty()) << catalog << " has no p3.2xlarge spot rows";
  ZoneRow cheapest = rows.front();
  for (const auto& r : rows)
    if (r.spot < cheapest.spot) cheapest = r;
  const ZoneRow* first_of_region = nullptr;
  for (const auto& r : rows)
    if (r.region == cheapest.region) {
      first_of_region = &r;
      break;
    }
  ASSERT_NE(first_of_region, nullptr);
  // The case that broke: the priced zone is not the one a region-only launch lands in.
  ASSERT_NE(first_of_region->zone, cheapest.zone) << "the catalog no longer shows the two-zone case";
  ASSERT_NE(first_of_region->spot, cheapest.spot);

  jobctl::testing::TempDir sim_dir;
  jobctl::testing::ServerProcess sim({jobctl::testing::env_or_fail("JOBCTL_CLOUDSIM"), "--listen", "127.0.0.1:0",
                                      "--state-dir", sim_dir.file("state"), "--catalog", catalog, "--catalog-cloud",
                                      "aws", "--server", "http://127.0.0.1:9", "--terminate-grace-s", "1",
                                      "--worker-command", "sleep 600 # {instance_id}"},
                                     30s);
  ASSERT_TRUE(sim.ok());

  PlacementFixture f(aws_placement(catalog));
  f.clock.set_ms(real_now_ms());
  provisioning::Provisioner prov(*f.db, f.clock, *f.svc, *f.placement,
                                 std::make_unique<cloud::SimProvider>(cloud::SimProviderOptions{sim.url(), 5000}),
                                 cloud_settings());
  prov.set_server_url("http://127.0.0.1:9");
  auto instance_row = [&](const std::string& instance_id) {
    auto all = f.db->list_instances();
    EXPECT_TRUE(all);
    if (all)
      for (const auto& r : *all)
        if (r.id == instance_id) return r;
    ADD_FAILURE() << "no row for " << instance_id;
    return store::InstanceRow{};
  };
  auto pass = [&] {
    f.clock.set_ms(real_now_ms());
    auto p = prov.run_pass();
    EXPECT_TRUE(p) << (p ? "" : p.error().message);
    return p ? *p : provisioning::ProvisionerPass{};
  };

  const int64_t job = f.submit(mlp_spec(R"(,"resources":{"gpu":"V100"},"placement":{"spot":"always"})"));
  const nlohmann::json chosen = f.placement_of(job)["chosen"];
  ASSERT_EQ(chosen["option"], "spot") << chosen.dump();
  ASSERT_EQ(chosen["instance_type"], "p3.2xlarge") << chosen.dump();
  EXPECT_EQ(chosen["zone"], cheapest.zone);
  EXPECT_DOUBLE_EQ(chosen["usd_per_hour"].get<double>(), cheapest.spot);

  ASSERT_EQ(pass().launched, 1);
  auto launched = f.db->list_instances();
  ASSERT_TRUE(launched && launched->size() == 1u);
  const std::string id = launched->front().id;
  EXPECT_EQ(launched->front().zone, cheapest.zone);
  EXPECT_DOUBLE_EQ(launched->front().usd_per_hour, cheapest.spot);

  // The cloud agrees: the instance runs in that zone at that zone's price.
  cloud::SimProvider cloud_side({sim.url(), 5000});
  auto described = cloud_side.describe("zone-test");
  ASSERT_TRUE(described && described->size() == 1u);
  EXPECT_EQ(described->front().zone, cheapest.zone);
  EXPECT_DOUBLE_EQ(described->front().usd_per_hour, cheapest.spot);

  // The cloud ends it (as a reclaim would); the daemon sees it only a while later.
  std::this_thread::sleep_for(1200ms);
  ASSERT_TRUE(cloud_side.terminate(id));
  std::this_thread::sleep_for(1500ms);
  ASSERT_TRUE(jobctl::testing::poll_until([&] {
    pass();
    return !instance_row(id).live();
  }, 20s, 100ms));
  pass();  // one more: the ledger closes on the pass after the end is recorded, at the latest

  auto billing = cloud_side.billing();
  ASSERT_TRUE(billing) << billing.error().message;
  nlohmann::json billed;
  for (const auto& i : (*billing)["instances"])
    if (i["id"] == id) billed = i;
  ASSERT_TRUE(billed.is_object()) << billing->dump();
  const int64_t cloud_launched = billed["launched_ms"].get<int64_t>();
  const int64_t cloud_ended = billed["ended_ms"].get<int64_t>();
  const int64_t cloud_seconds = billed["billed_seconds"].get<int64_t>();  // time factor 1: real seconds
  ASSERT_GE(cloud_ended - cloud_launched, 1200);

  const store::InstanceRow row = instance_row(id);
  EXPECT_EQ(row.launched_ms, cloud_launched);
  EXPECT_EQ(row.ended_ms, cloud_ended);

  auto ledger = f.db->ledger_rows(0, real_now_ms() + 1000);
  ASSERT_TRUE(ledger) << ledger.error().message;
  int64_t ms = 0, seconds = 0;
  double usd = 0;
  for (const auto& l : *ledger) {
    if (l.resource != "instance:" + id) continue;
    EXPECT_EQ(l.job_id, job);
    EXPECT_EQ(l.kind, "spot");
    EXPECT_DOUBLE_EQ(l.usd_per_hour, cheapest.spot);
    ms += l.end_ms - l.start_ms;
    seconds += l.billed_seconds;
    usd += l.usd;
  }
  EXPECT_EQ(ms, cloud_ended - cloud_launched);
  EXPECT_EQ(seconds, cloud_seconds);
  // By hand: whole seconds started, at the priced zone's spot price.
  EXPECT_NEAR(usd, static_cast<double>((cloud_ended - cloud_launched + 999) / 1000) * cheapest.spot / 3600.0, 1e-12);
  EXPECT_NEAR(usd, billed["usd"].get<double>(), 1e-12);
}

}  // namespace
}  // namespace jobctl::daemon::testing
