// jobctl-cloudsim as a real process over HTTP, through the sim driver (cloud/sim_provider.h):
// launch, describe, billing, the per-instance notice endpoint (404, then the EC2 document),
// reclaim, terminate, errors, and trace replay of a real trace from ../shared/data.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "client/http_client.h"
#include "cloud/command_template.h"
#include "cloud/sim_provider.h"
#include "tests/support/process.h"
#include "tests/support/shared_data.h"
#include "tests/support/temp_dir.h"
#include "tests/support/poll.h"

namespace {

using namespace jobctl::cloud;
using namespace std::chrono_literals;
using nlohmann::json;

// A running jobctl-cloudsim; its URL is read from its start-up line. `extra`: more flags, as
// shell words.
class Cloudsim {
 public:
  Cloudsim(const jobctl::testing::TempDir& dir, const std::string& extra)
      : process_(jobctl::process::shell_argv("exec " + command(dir, extra)), {.cwd = dir.path().string()}) {
    const nlohmann::json started = jobctl::testing::listening_line(process_, 10s);
    if (started.is_null()) {
      ADD_FAILURE() << "no start-up line:\n" << log();
      return;
    }
    url_ = started["url"];
  }
  ~Cloudsim() { process_.stop(SIGTERM, 5s); }
  const std::string& url() const { return url_; }
  std::string log() const { return process_.output(); }

 private:
  static std::string command(const jobctl::testing::TempDir& dir, const std::string& extra) {
    return shell_quote(jobctl::testing::env_or_fail("JOBCTL_CLOUDSIM")) + " --listen 127.0.0.1:0 --state-dir " +
           shell_quote(dir.file("state")) + " --server http://127.0.0.1:9" +
           " --worker-command 'sleep 600 # {instance_id}' " + extra;
  }
  jobctl::testing::Process process_;
  std::string url_;
};

LaunchRequest request(const std::string& type, bool spot) {
  LaunchRequest r;
  r.offer.instance_type = type;
  r.spot = spot;
  r.server_url = "http://127.0.0.1:9";
  r.tag = "e2e";
  return r;
}

TEST(CloudsimHttp, LaunchBillNoticeReclaimTerminate) {
  jobctl::testing::TempDir dir;
  Cloudsim sim(dir, "--time-factor 60 --notice-seconds 120");
  ASSERT_FALSE(sim.url().empty());
  SimProvider p({sim.url(), 5000});

  auto offers = p.list_offers();
  ASSERT_TRUE(offers) << offers.error().message;
  EXPECT_GE(offers->size(), 10u);

  auto spot = p.launch(request("p3.2xlarge", true));
  ASSERT_TRUE(spot) << spot.error().message;
  EXPECT_TRUE(spot->spot);
  EXPECT_EQ(spot->state, "running");
  auto od = p.launch(request("g4dn.xlarge", false));
  ASSERT_TRUE(od);

  jobctl::client::HttpClient http(sim.url());
  const std::string notice = "/instances/" + spot->id + "/latest/meta-data/spot/instance-action";
  auto r = http.request("GET", notice);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);

  std::this_thread::sleep_for(1s);
  auto bill = p.billing();
  ASSERT_TRUE(bill);
  // At least one real second at F = 60: at least 60 billed seconds per instance.
  EXPECT_GE((*bill)["instances"][0]["billed_seconds"].get<int64_t>(), 60);
  EXPECT_GT((*bill)["total_usd"].get<double>(), 0);

  r = http.request("POST", "/instances/" + spot->id + "/interrupt", "{}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  r = http.request("GET", notice);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  json doc = json::parse(r->body);
  EXPECT_EQ(doc["action"], "terminate");
  EXPECT_EQ(doc["time"].get<std::string>().size(), 20u);  // 2026-11-22T08:00:00Z
  auto feed = p.interruptions("e2e", 0);
  ASSERT_TRUE(feed);
  ASSERT_EQ(feed->size(), 1u);
  EXPECT_EQ((*feed)[0].instance_id, spot->id);

  // Reclaimed 2 real seconds after the notice.
  std::string state;
  jobctl::testing::poll_until([&] {
    auto all = p.describe("e2e");
    EXPECT_TRUE(all);
    if (!all) return true;  // failed: stop asking
    for (const auto& i2 : *all)
      if (i2.id == spot->id) state = i2.state;
    return state == "terminated";
  });
  EXPECT_EQ(state, "terminated") << sim.log();

  ASSERT_TRUE(p.terminate(od->id));
  ASSERT_TRUE(p.terminate("i-unknown"));  // the goal (no such instance) holds
  auto all = p.describe("e2e");
  ASSERT_TRUE(all);
  for (const auto& i : *all) EXPECT_NE(i.state, "running") << i.id;
  auto none = p.describe("other-tag");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());

  // Bad input: clear errors naming the field.
  r = http.request("POST", "/instances", R"({"instance_type":"p3.2xlarge","spot":"yes"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["error"]["field"], "spot");
  auto bad = p.launch(request("nope.large", false));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "instance_type");
  r = http.request("POST", "/instances", R"({"instance_type":"p3.2xlarge","colour":1})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
}

TEST(CloudsimHttp, ReplaysARealTrace) {
  const char* relative = "spot-traces/availability/1-node/aws-10-26-2022/us-west-2a_v100_1.json";
  JOBCTL_NEED_SHARED_DATA(relative);
  const std::string trace = jobctl::testing::shared_data(relative).string();
  jobctl::testing::TempDir dir;
  // 600 s ticks replayed at F = 6000: ten ticks per real second, so within a few seconds the
  // trace's first unavailable stretch reclaims the spot instance or refuses spot launches.
  Cloudsim sim(dir, "--time-factor 6000 --notice-seconds 600 --trace " + shell_quote(trace));
  ASSERT_FALSE(sim.url().empty());
  SimProvider p({sim.url(), 5000});
  std::string launched;
  bool refused = false, interrupted = false;
  jobctl::testing::poll_until([&] {
    if (launched.empty()) {
      auto inst = p.launch(request("p3.2xlarge", true));
      if (inst) launched = inst->id;
      else if (inst.error().code == jobctl::ErrorCode::unavailable) refused = true;
      else {
        ADD_FAILURE() << inst.error().message;
        return true;  // failed: stop asking
      }
    }
    auto feed = p.interruptions("e2e", 0);
    EXPECT_TRUE(feed);
    if (!feed) return true;  // failed: stop asking
    interrupted = !feed->empty();
    return interrupted || refused;
  });
  EXPECT_TRUE(interrupted || refused) << sim.log();
}

}  // namespace
