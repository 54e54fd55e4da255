// POST /v1/quote, GET /v1/jobs/{id} placement and GET /v1/reports/* through real HTTP on loopback
//: a daemon in this process with placement, a local CPU worker, libcurl as the client.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/ticker.h"
#include "client/http_client.h"
#include "tests/daemon/placement_api_server.h"
#include "tests/support/temp_dir.h"
#include "tests/support/poll.h"

namespace jobctl::daemon::testing {
namespace {

using nlohmann::json;

TEST(PlacementHttp, QuoteEqualsThePlacementOfTheSubmittedJob) {
  jobctl::testing::TempDir dir;
  SystemClock clock;
  store::StoreOptions o;
  o.path = dir.file("jobctl.db");
  auto db = store::Store::open(o, clock);
  ASSERT_TRUE(db);
  PlacementApiServer api(**db, clock);
  ASSERT_FALSE(api.url.empty());
  jobctl::Ticker ticker(std::chrono::milliseconds(20), [&] {
    api.svc.tick();
    api.placement.tick();
  });
  client::HttpClient http(api.url);

  auto reg = http.request("POST", "/v1/workers/register",
                          R"({"name":"cpu","capabilities":{"gpus":[],"cpu_cores":2,"memory_mb":4096}})");
  ASSERT_TRUE(reg);
  ASSERT_EQ(reg->status, 201) << reg->body;

  const std::string spec = R"({"model":{"kind":"mlp","hidden":[32]},"data":{"dataset":"synthetic","samples":256}})";
  auto q = http.request("POST", "/v1/quote", spec);
  ASSERT_TRUE(q);
  ASSERT_EQ(q->status, 200) << q->body;
  json quote = json::parse(q->body);
  EXPECT_EQ(quote["chosen"]["option"], "local");
  EXPECT_EQ(quote["chosen"]["gpu"], "cpu");

  auto bad = http.request("POST", "/v1/quote", R"({"model":{"kind":"mlp","hidden":[-1]}})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_TRUE(json::parse(bad->body).contains("error")) << bad->body;

  auto sub = http.request("POST", "/v1/jobs", spec);
  ASSERT_TRUE(sub);
  ASSERT_EQ(sub->status, 201) << sub->body;
  const int64_t id = json::parse(sub->body)["id"];
  json job;
  jobctl::testing::poll_until([&] {  // placed on the next tick
    auto g = http.request("GET", "/v1/jobs/" + std::to_string(id));
    if (g) job = json::parse(g->body);
    return job.is_object() && job["state"] == "placed";
  });
  ASSERT_EQ(job["state"], "placed") << job.dump(2);
  EXPECT_EQ(job["placement"]["chosen"], quote["chosen"]);
  EXPECT_EQ(job["placement"]["candidates"], quote["candidates"]);
  EXPECT_TRUE(job["runtime"].is_object());

  auto spend = http.request("GET", "/v1/reports/spend?group_by=placement");
  ASSERT_TRUE(spend);
  EXPECT_EQ(spend->status, 200) << spend->body;
  auto spend_bad = http.request("GET", "/v1/reports/spend?group_by=team");
  ASSERT_TRUE(spend_bad);
  EXPECT_EQ(spend_bad->status, 400);
  EXPECT_EQ(json::parse(spend_bad->body)["error"]["field"], "group_by") << spend_bad->body;

  auto be = http.request("GET", "/v1/reports/breakeven?gpu=V100&purchase_usd=2000&offer=aws:p3.2xlarge"
                                "&power_kw=0&electricity_usd_per_kwh=0&region=us-east-1");
  ASSERT_TRUE(be);
  ASSERT_EQ(be->status, 200) << be->body;
  EXPECT_NEAR(json::parse(be->body)["breakeven_hours"].get<double>(), 2000 / 3.06, 0.05);

  api.server->begin_shutdown();
  api.svc.shutdown();
  api.server->stop();
  ticker.stop();
  (*db)->close();
}

}  // namespace
}  // namespace jobctl::daemon::testing
