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

// A placement API over a fresh store, its service and placement ticked every 20 ms, with one
// local CPU worker registered (no commands): what the tests below talk to through `http`.
class PlacementHttpWithWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions o;
    o.path = dir_.file("jobctl.db");
    auto db = store::Store::open(o, clock_);
    ASSERT_TRUE(db);
    db_ = std::move(*db);
    api_ = std::make_unique<PlacementApiServer>(*db_, clock_);
    ASSERT_FALSE(api_->url.empty());
    ticker_ = std::make_unique<jobctl::Ticker>(std::chrono::milliseconds(20), [this] {
      api_->svc.tick();
      api_->placement.tick();
    });
    http_ = std::make_unique<client::HttpClient>(api_->url);
    auto reg = http_->request("POST", "/v1/workers/register",
                              R"({"name":"cpu","capabilities":{"gpus":[],"cpu_cores":2,"memory_mb":4096}})");
    ASSERT_TRUE(reg);
    ASSERT_EQ(reg->status, 201) << reg->body;
  }
  void TearDown() override {
    if (api_) {
      api_->server->begin_shutdown();
      api_->svc.shutdown();
      api_->server->stop();
    }
    if (ticker_) ticker_->stop();
    if (db_) db_->close();
  }

  jobctl::testing::TempDir dir_;
  SystemClock clock_;
  std::unique_ptr<store::Store> db_;
  std::unique_ptr<PlacementApiServer> api_;
  std::unique_ptr<jobctl::Ticker> ticker_;
  std::unique_ptr<client::HttpClient> http_;
};

TEST_F(PlacementHttpWithWorker, QuoteEqualsThePlacementOfTheSubmittedJob) {
  client::HttpClient& http = *http_;

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
}

// A 7B full fine-tune (bf16, AdamW, seq 2048, selective recomputation, ZeRO-3) described by
// estimate.model: the quote lists each GPU model of the seed catalog at the smallest count that
// holds it, with its memory per GPU; a fixed count on a 24 GB card is rejected with the figures;
// "auto" is accepted at submit (the count is chosen where it is placed).
TEST(PlacementHttp, QuoteChoosesTheGpuCountThatHoldsASevenBillionParameterFineTune) {
  jobctl::testing::TempDir dir;
  SystemClock clock;
  store::StoreOptions o;
  o.path = dir.file("jobctl.db");
  auto db = store::Store::open(o, clock);
  ASSERT_TRUE(db);
  PlacementApiServer api(**db, clock);
  ASSERT_FALSE(api.url.empty());
  client::HttpClient http(api.url);
  const auto spec = [](const std::string& gpu, const std::string& gpus) {
    return R"({"command": ["python3", "finetune.py"], "resources": {"gpu": ")" + gpu + R"(", "gpus": )" + gpus +
           R"(}, "estimate": {"model": {"layers": 32, "hidden": 4096, "heads": 32, "vocab": 32000, "seq_len": 2048,
           "tokens": 1000000000, "precision": "bf16", "optimizer": "adamw", "recompute": "selective",
           "zero_stage": 3}}})";
  };
  auto q = http.request("POST", "/v1/quote", spec("any", R"("auto")"));
  ASSERT_TRUE(q);
  ASSERT_EQ(q->status, 200) << q->body;
  const json quote = json::parse(q->body);
  int seen = 0;
  for (const auto& c : quote["candidates"]) {
    if (c["option"] != "on_demand") continue;
    const std::string type = c["instance_type"];
    if (type == "p5.48xlarge") {  // 8 x H100 80 GB: 2 hold it (65.9 GiB each), 1 does not (120.9)
      EXPECT_EQ(c["job_gpus"], 2) << c.dump();
      EXPECT_NEAR(c["memory_gib_per_gpu"].get<double>(), 65.85, 0.01) << c.dump();
      EXPECT_GT(c["estimated_cost_usd"].get<double>(), 0) << c.dump();
      ++seen;
    } else if (type == "p4d.24xlarge") {  // 8 x A100 40 GB: 4 (38.3 GiB each)
      EXPECT_EQ(c["job_gpus"], 4) << c.dump();
      EXPECT_NEAR(c["memory_gib_per_gpu"].get<double>(), 38.34, 0.01) << c.dump();
      ++seen;
    } else if (type == "g5.xlarge") {  // 1 x A10G: nothing holds it
      EXPECT_EQ(c["rejection"], "memory") << c.dump();
      EXPECT_NE(c["rejected"].get<std::string>().find("GiB per GPU with ZeRO-3 on 1 GPU"), std::string::npos) << c.dump();
      ++seen;
    }
  }
  EXPECT_EQ(seen, 3) << quote.dump(1);

  // A fixed single A10G: every option rejected for memory, with the figures.
  auto fixed = http.request("POST", "/v1/quote", spec("A10G", "1"));
  ASSERT_TRUE(fixed);
  const json f = json::parse(fixed->body);
  EXPECT_EQ(f["outcome"], "unplaceable") << fixed->body;
  EXPECT_NE(f["reason"].get<std::string>().find("memory (needs 120.89 GiB per GPU)"), std::string::npos) << fixed->body;

  auto sub = http.request("POST", "/v1/jobs", spec("any", R"("auto")"));
  ASSERT_TRUE(sub);
  ASSERT_EQ(sub->status, 201) << sub->body;
  auto got = http.request("GET", "/v1/jobs/" + std::to_string(json::parse(sub->body)["id"].get<int64_t>()));
  ASSERT_TRUE(got);
  const json job = json::parse(got->body);
  EXPECT_EQ(job["spec"]["resources"]["gpus"], "auto") << got->body;
  // No worker and no cloud provider here: not placed, it counts as the least it runs on.
  EXPECT_EQ(job["resources"]["gpus"], 1) << got->body;
}

// Why a job waits, through real HTTP: command jobs nothing here can run (the one worker runs no
// commands) say so, with their places in the queue of jobs that want the same thing; the
// listing carries the same `waiting` as the job.
TEST_F(PlacementHttpWithWorker, ACommandJobNothingCanRunSaysWhyAndWhereItIsInTheQueue) {
  client::HttpClient& http = *http_;

  const std::string spec =
      R"({"command":["python3","train.py","--steps","300"],"resources":{"gpu":"cpu"},"placement":{"queue_if_unplaceable":true}})";
  std::vector<int64_t> ids;
  for (int i = 0; i < 2; ++i) {
    auto sub = http.request("POST", "/v1/jobs", spec);
    ASSERT_TRUE(sub);
    ASSERT_EQ(sub->status, 201) << sub->body;
    ids.push_back(json::parse(sub->body)["id"]);
  }
  auto job = [&](int64_t id) {
    auto g = http.request("GET", "/v1/jobs/" + std::to_string(id));
    return g && g->status == 200 ? json::parse(g->body) : json();
  };
  json first, second;
  jobctl::testing::poll_until([&] {  // decided on the next ticks
    first = job(ids[0]);
    second = job(ids[1]);
    return first.is_object() && second.is_object() && first["placement"].is_object() && second["placement"].is_object();
  });
  ASSERT_EQ(first["state"], "queued") << first.dump(2);
  EXPECT_EQ(first["name"], "train.py") << "named after the script, not python3";
  const json& w1 = first["waiting"];
  ASSERT_TRUE(w1.is_object()) << first.dump(2);
  EXPECT_NE(w1["reason"].get<std::string>().find("no worker can run commands"), std::string::npos) << w1.dump();
  EXPECT_NE(w1["reason"].get<std::string>().find("--allow-commands"), std::string::npos) << w1.dump();
  EXPECT_EQ(w1["position"], 1) << w1.dump();
  EXPECT_EQ(w1["queue_length"], 2) << w1.dump();
  EXPECT_TRUE(w1["expected_start_ms"].is_null()) << w1.dump();
  EXPECT_NE(w1["expected_start_basis"].get<std::string>().find("no option can run it"), std::string::npos) << w1.dump();
  EXPECT_EQ(second["waiting"]["position"], 2) << second.dump(2);
  EXPECT_EQ(second["waiting"]["queue"], w1["queue"]);
  EXPECT_EQ(first["runtime"], nullptr) << "never placed";

  auto list = http.request("GET", "/v1/jobs");
  ASSERT_TRUE(list);
  ASSERT_EQ(list->status, 200) << list->body;
  const json listed = json::parse(list->body);
  ASSERT_EQ(listed["jobs"].size(), 2u) << list->body;
  EXPECT_EQ(listed["jobs"][0]["waiting"], w1) << list->body;
  EXPECT_EQ(listed["jobs"][1]["waiting"], second["waiting"]) << list->body;

  // A built-in model job fits the CPU worker: placed and then leased, it no longer waits.
  auto runs = http.request("POST", "/v1/jobs", R"({"model":{"kind":"mlp","hidden":[8]},"data":{"dataset":"synthetic","samples":64}})");
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->status, 201) << runs->body;
  const int64_t model_job = json::parse(runs->body)["id"];
  json placed;
  jobctl::testing::poll_until([&] {
    placed = job(model_job);
    return placed.is_object() && placed["state"] == "placed";
  });
  ASSERT_EQ(placed["state"], "placed") << placed.dump(2);
  const json& wp = placed["waiting"];
  ASSERT_TRUE(wp.is_object()) << placed.dump(2);
  EXPECT_NE(wp["reason"].get<std::string>().find("placed on local CPU"), std::string::npos) << wp.dump();
  EXPECT_EQ(wp["position"], 1) << wp.dump();
  ASSERT_TRUE(wp["expected_start_ms"].is_number_integer()) << wp.dump();
  EXPECT_GE(wp["expected_start_ms"].get<int64_t>(), placed["created_ms"].get<int64_t>());
  EXPECT_EQ(placed["runtime"]["basis"], "model") << placed["runtime"].dump();
}

}  // namespace
}  // namespace jobctl::daemon::testing
