// The route table and handlers without sockets: every malformed request gets its 4xx with a JSON
// error naming the field, and leaves the store exactly as it was.
#include "daemon/http/api_routes.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <future>
#include <map>

#include <nlohmann/json.hpp>

#include "daemon/auth/worker_credentials.h"
#include "daemon/http/api_json.h"
#include "daemon/http/bundle_routes.h"
#include "daemon/http/auth_setup.h"
#include "daemon/http/registry_credential_routes.h"
#include "net/json_body.h"
#include "base/text_file.h"
#include "tests/daemon/service_support.h"
#include "tests/support/temp_dir.h"

namespace jobctl::daemon::http {
namespace {

using jobctl::daemon::testing::mlp_spec;
using jobctl::daemon::testing::ServiceFixture;
using nlohmann::json;

class Api : public ::testing::Test {
 protected:
  explicit Api(ApiInfo info = {}) : router_(make_api_router(*f_.svc, std::move(info))) {
    // The request gate (auth off): the worker protocol's calls carry their worker's secret.
    auto installed = install_hardening(router_, *f_.svc, *f_.db, f_.clock, auth::SecurityOptions{});
    EXPECT_TRUE(installed) << (installed ? "" : installed.error().message);
    if (installed) hardening_ = std::move(*installed);
  }

  net::HttpResponse call(const std::string& method, const std::string& target, const std::string& body = "",
                    const std::string& content_type = "application/json") {
    net::HttpRequest req;
    req.method = method;
    req.target = target;
    req.body = body;
    req.content_type = body.empty() ? "" : content_type;
    req.set_header("X-Worker-Secret", secret_);
    if (auto st = net::parse_target(target, req); !st) return net::error_response(st.error());
    std::promise<net::HttpResponse> p;
    auto fut = p.get_future();
    router_.handle(req, [&p](net::HttpResponse r) { p.set_value(std::move(r)); });
    return fut.get();
  }
  json body_of(const net::HttpResponse& r) { return r.body.empty() ? json() : json::parse(r.body); }

  // Expects status + error code + field, and that the store did not change.
  void expect_refused(const std::string& method, const std::string& target, const std::string& body,
                      int status, const std::string& field, const std::string& content_type = "application/json") {
    const std::string before = f_.dump();
    net::HttpResponse r = call(method, target, body, content_type);
    EXPECT_EQ(r.status, status) << method << " " << target << " " << body.substr(0, 80) << " -> " << r.body;
    json j = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
    EXPECT_TRUE(j["error"]["code"].is_string());
    EXPECT_TRUE(j["error"]["message"].is_string());
    if (field.empty()) {
      EXPECT_TRUE(j["error"]["field"].is_null() || j["error"]["field"].is_string());
    } else {
      EXPECT_EQ(j["error"]["field"], field) << r.body;
    }
    EXPECT_EQ(f_.dump(), before) << "the store changed after " << method << " " << target;
  }

  int64_t leased_job(int64_t* worker) {
    const int64_t job = f_.submit();
    auto issued = auth::WorkerCredentials::issue();
    EXPECT_TRUE(issued);
    secret_ = issued->secret;
    *worker = f_.register_worker({}, "w", issued->hash_hex);
    auto l = f_.lease_now(*worker);
    EXPECT_TRUE(l && *l);
    return job;
  }

  ServiceFixture f_;
  net::Router router_;
  std::unique_ptr<Hardening> hardening_;
  std::string secret_;  // sent as X-Worker-Secret
};

TEST(JsonBody, MemberTextIsAValueExactlyAsReceived) {
  const std::string body =
      R"( { "worker_id" : 7, "log":"a \"}\" b", "pro\u0067ress" :  {"loss": [1, {"x": "]"}], "s": "{"} , "epoch":3 } )";
  ASSERT_TRUE(net::parse_json_body(body));
  EXPECT_EQ(net::member_text(body, "worker_id"), "7");
  EXPECT_EQ(net::member_text(body, "log"), R"("a \"}\" b")");
  // A key written with an escape is the key it spells; brackets inside strings do not count.
  EXPECT_EQ(net::member_text(body, "progress"), R"({"loss": [1, {"x": "]"}], "s": "{"})");
  EXPECT_EQ(net::member_text(body, "epoch"), "3");
  EXPECT_EQ(net::member_text(body, "result"), std::nullopt);
  // Any depth, without recursion.
  const std::string deep = "{\"progress\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(net::member_text(deep, "progress")->size(), 200000u);
}

// 1 MB of "{}," would be 330,000 objects, over 20 MB in memory: refused while it is parsed.
TEST(JsonBody, ValuesPastTheirBytesInMemoryAreRefusedNamingBody) {
  std::string body = "[";
  for (int i = 0; i < 330'000; ++i) body += i ? ",{}" : "{}";
  body += "]";
  auto parsed = net::parse_json_body(body);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::payload_too_large);
  EXPECT_EQ(parsed.error().field, "body");
  // A long string is its bytes: 4 MB of text in one value is fine.
  EXPECT_TRUE(net::parse_json_body("{\"task\": \"" + std::string(4 << 20, 'x') + "\"}"));
}

TEST_F(Api, SubmitReturns201WithIdAndLocation) {
  net::HttpResponse r = call("POST", "/v1/jobs", mlp_spec(R"(,"name":"x")"));
  ASSERT_EQ(r.status, 201) << r.body;
  json j = body_of(r);
  EXPECT_EQ(j["state"], "queued");
  EXPECT_EQ(j["name"], "x");
  ASSERT_TRUE(j["id"].is_number_integer());
  bool has_location = false;
  for (const auto& [k, v] : r.headers) has_location |= k == "Location" && v == "/v1/jobs/" + std::to_string(j["id"].get<int64_t>());
  EXPECT_TRUE(has_location);
  net::HttpResponse got = call("GET", "/v1/jobs/" + std::to_string(j["id"].get<int64_t>()));
  ASSERT_EQ(got.status, 200);
  json d = body_of(got);
  EXPECT_EQ(d["spec"]["name"], "x");
  EXPECT_EQ(d["spec"]["train"]["epochs"], 10);  // defaults filled in: the canonical spec
  ASSERT_EQ(d["events"].size(), 1u);
  EXPECT_EQ(d["events"][0]["to"], "queued");
}

TEST_F(Api, MalformedSubmissionsAreRefusedAndChangeNothing) {
  f_.submit();  // the store is not empty: refusals must not touch existing rows either
  expect_refused("POST", "/v1/jobs", "{\"model\": {\"kind\": \"mlp\"", 400, "body");
  expect_refused("POST", "/v1/jobs", mlp_spec(R"(,"unknown_key":1)"), 400, "unknown_key");
  expect_refused("POST", "/v1/jobs", mlp_spec(R"(,"train":{"epochs":-3})"), 400, "train.epochs");
  expect_refused("POST", "/v1/jobs", mlp_spec(R"(,"train":{"epochs":"1"})"), 400, "train.epochs");
  expect_refused("POST", "/v1/jobs", mlp_spec(R"(,"train":{"lr":true})"), 400, "train.lr");
  expect_refused("POST", "/v1/jobs", R"({"model":{"kind":"transformer"},"data":{"dataset":"synthetic"}})", 400, "model.kind");
  expect_refused("POST", "/v1/jobs", "", 400, "body");
  expect_refused("POST", "/v1/jobs", mlp_spec(), 415, "Content-Type", "text/plain");
  // A GPU name the table does not know: 400 on resources.gpu, with the closest known names.
  expect_refused("POST", "/v1/jobs", mlp_spec(R"(,"resources":{"gpu":"RTX4080"})"), 400, "resources.gpu");
  expect_refused("POST", "/v1/jobs", mlp_spec(R"(,"resources":{"gpu":"A100-48GB"})"), 400, "resources.gpu");
  net::HttpResponse r = call("POST", "/v1/jobs", mlp_spec(R"(,"resources":{"gpu":"RTX4080"})"));
  EXPECT_NE(body_of(r)["error"]["message"].get<std::string>().find("closest known names: RTX4090"), std::string::npos)
      << r.body;
}

// A job no registered worker and no catalog offer could ever run is refused at submit, naming the
// field and the reason; placement.queue_if_unplaceable keeps it queued instead. (Before, a model
// needing hundreds of GB was accepted with 201 and sat queued for ever.)
TEST_F(Api, WhatNothingCouldRunIsRefusedAtSubmit) {
  cost::Offer p5;
  p5.cloud = "aws";
  p5.instance_type = "p5.48xlarge";
  p5.region = "us-east-1";
  p5.gpu_model = "H100-SXM";
  p5.gpu_count = 8;
  p5.gpu_memory_gb = 80;
  p5.on_demand_usd_per_hour = 98.32;
  jobs::Feasibility feasibility({p5}, 16);
  f_.svc->set_feasibility(&feasibility);
  f_.register_worker({{"Tesla V100-SXM2-16GB", 16160}, {"Tesla V100-SXM2-16GB", 16160}});
  jobs::WorkerRegistration cpu;  // a CPU worker with 16 GiB
  cpu.name = "cpu";
  cpu.capabilities.cpu_cores = 4;
  cpu.capabilities.memory_mb = 16384;
  ASSERT_TRUE(f_.svc->register_worker(cpu));
  expect_refused("POST", "/v1/jobs", mlp_spec(R"(,"resources":{"gpu":"A100"})"), 400, "resources.gpu");
  expect_refused("POST", "/v1/jobs", mlp_spec(R"(,"resources":{"gpu":"V100","gpus":4})"), 400, "resources.gpus");
  expect_refused("POST", "/v1/jobs", mlp_spec(R"(,"resources":{"gpu":"H100","gpus":16})"), 400, "resources.gpus");
  const std::string huge = R"({"model":{"kind":"mlp","hidden":[65536,65536,65536]},"data":{"dataset":"synthetic"}})";
  expect_refused("POST", "/v1/jobs", huge, 400, "resources.gpu");
  net::HttpResponse r = call("POST", "/v1/jobs", huge);
  EXPECT_NE(body_of(r)["error"]["message"].get<std::string>().find("of memory per GPU"), std::string::npos) << r.body;
  for (const char* ok : {R"(,"resources":{"gpu":"V100","gpus":2})", R"(,"resources":{"gpu":"H100","gpus":8})",
                         R"(,"resources":{"gpu":"cpu"})", R"(,"resources":{"gpu":"A100"},"placement":{"queue_if_unplaceable":true})"})
    EXPECT_EQ(call("POST", "/v1/jobs", mlp_spec(ok)).status, 201) << ok;
  // A worker that comes makes it runnable.
  f_.register_worker({{"NVIDIA A100-SXM4-80GB", 81920}});
  EXPECT_EQ(call("POST", "/v1/jobs", mlp_spec(R"(,"resources":{"gpu":"A100"})")).status, 201);
  f_.svc->set_feasibility(nullptr);
}

// A command job that describes a 7B full fine-tune (bf16, AdamW, seq 2048, selective
// recomputation, ZeRO-3): on one 24 GB A10G it is refused at submit with the figures; on two H100
// 80 GB it fits (65.19 GiB each) and is accepted.
TEST_F(Api, AFixedGpuCountThatCannotHoldTheDescribedWorkloadIsRefusedWithTheFigures) {
  cost::Offer g5;
  g5.cloud = "aws";
  g5.instance_type = "g5.xlarge";
  g5.region = "us-east-1";
  g5.gpu_model = "A10G";
  g5.gpu_count = 1;
  g5.gpu_memory_gb = 24;
  g5.on_demand_usd_per_hour = 1.006;
  cost::Offer p5 = g5;
  p5.instance_type = "p5.48xlarge";
  p5.gpu_model = "H100-SXM";
  p5.gpu_count = 8;
  p5.gpu_memory_gb = 80;
  p5.on_demand_usd_per_hour = 98.32;
  jobs::Feasibility feasibility({g5, p5}, 16);
  f_.svc->set_feasibility(&feasibility);
  const auto spec = [](const std::string& resources) {
    return R"({"command": ["python3", "finetune.py"], "resources": )" + resources +
           R"(, "estimate": {"model": {"layers": 32, "hidden": 4096, "heads": 32, "vocab": 32000, "seq_len": 2048,
           "tokens": 1000000000, "recompute": "selective", "zero_stage": 3}}})";
  };
  expect_refused("POST", "/v1/jobs", spec(R"({"gpu": "A10G", "gpus": 1})"), 400, "resources.gpus");
  const std::string message =
      body_of(call("POST", "/v1/jobs", spec(R"({"gpu": "A10G", "gpus": 1})")))["error"]["message"].get<std::string>();
  EXPECT_NE(message.find("needs 120.89 GiB per GPU with ZeRO-3 on 1 GPU"), std::string::npos) << message;
  EXPECT_NE(message.find("an A10G has 24.00 GiB"), std::string::npos) << message;
  EXPECT_EQ(call("POST", "/v1/jobs", spec(R"({"gpu": "H100", "gpus": 2})")).status, 201);
  f_.svc->set_feasibility(nullptr);
}

// The names the CLI's own examples and people use are accepted and stored in canonical form.
TEST_F(Api, GpuNamesAreStoredCanonical) {
  for (auto [asked, stored] : {std::pair{"rtx 4090", "RTX4090"}, std::pair{"A100-80GB", "A100-80GB"},
                               std::pair{"h100 pcie", "H100-PCIe"}, std::pair{"CPU", "cpu"}}) {
    net::HttpResponse r =
        call("POST", "/v1/jobs", mlp_spec(std::string(R"(,"resources":{"gpu":")") + asked + R"("})"));
    ASSERT_EQ(r.status, 201) << asked << ": " << r.body;
    EXPECT_EQ(body_of(r)["resources"]["gpu"], stored) << asked;
  }
}

TEST_F(Api, RoutingErrors) {
  expect_refused("GET", "/v1/nothing", "", 404, "");
  expect_refused("DELETE", "/v1/jobs", "", 405, "");
  expect_refused("GET", "/v1/jobs/12345", "", 404, "");
  expect_refused("GET", "/v1/jobs/abc", "", 400, "id");
  expect_refused("GET", "/v1/jobs/-1", "", 400, "id");
  expect_refused("GET", "/v1/jobs/99999999999999999999999", "", 400, "id");
  net::HttpResponse r = call("PUT", "/v1/jobs/1/cancel");
  EXPECT_EQ(r.status, 405);
  bool allow = false;
  for (const auto& [k, v] : r.headers) allow |= k == "Allow" && v == "POST";
  EXPECT_TRUE(allow);
}

TEST_F(Api, ListValidatesItsQuery) {
  expect_refused("GET", "/v1/jobs?state=sleeping", "", 400, "state");
  expect_refused("GET", "/v1/jobs?limit=0", "", 400, "limit");
  expect_refused("GET", "/v1/jobs?limit=ten", "", 400, "limit");
  expect_refused("GET", "/v1/jobs?limit=100000000", "", 400, "limit");
  expect_refused("GET", "/v1/jobs?after=-5", "", 400, "after");
  expect_refused("GET", "/v1/jobs?colour=red", "", 400, "colour");
}

TEST_F(Api, ListPaginatesWithTheNextCursor) {
  for (int i = 0; i < 5; ++i) f_.submit();
  const int64_t cancelled = f_.submit();
  ASSERT_TRUE(f_.svc->cancel_job(cancelled));
  std::vector<int64_t> ids;
  std::string target = "/v1/jobs?state=queued&limit=2";
  for (int i = 0; i < 10; ++i) {
    json page = body_of(call("GET", target));
    for (const auto& j : page["jobs"]) {
      EXPECT_EQ(j["state"], "queued");
      ids.push_back(j["id"].get<int64_t>());
    }
    if (page["next"].is_null()) break;
    target = "/v1/jobs?state=queued&limit=2&after=" + page["next"].get<std::string>();
  }
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  json all = body_of(call("GET", "/v1/jobs?limit=100"));
  EXPECT_EQ(all["jobs"].size(), 6u);
  EXPECT_TRUE(all["next"].is_null());
}

TEST_F(Api, WorkerProtocolHappyPath) {
  net::HttpResponse reg = call("POST", "/v1/workers/register",
                          R"({"name":"w1","capabilities":{"gpus":[{"model":"Tesla T4","memory_mb":15360}],"cpu_cores":8,"memory_mb":32000}})");
  ASSERT_EQ(reg.status, 201) << reg.body;
  const int64_t w = body_of(reg)["worker_id"];
  EXPECT_EQ(body_of(reg)["heartbeat_interval_s"], f_.svc->options().heartbeat_interval_s);
  // Every later call carries the worker's own secret; without it the call is refused.
  ASSERT_TRUE(body_of(reg)["worker_secret"].is_string());
  EXPECT_EQ(call("POST", "/v1/workers/" + std::to_string(w) + "/lease?wait_s=0").status, 403);
  secret_ = body_of(reg)["worker_secret"];
  const std::string ws = std::to_string(w);
  EXPECT_EQ(call("POST", "/v1/workers/" + ws + "/lease?wait_s=0").status, 204);
  const int64_t job = f_.submit();
  net::HttpResponse lease = call("POST", "/v1/workers/" + ws + "/lease?wait_s=0");
  ASSERT_EQ(lease.status, 200) << lease.body;
  json l = body_of(lease);
  EXPECT_EQ(l["job_id"], job);
  EXPECT_EQ(l["epoch"], 1);
  EXPECT_TRUE(l["spec"].is_object());
  const std::string js = std::to_string(job);
  net::HttpResponse hb = call("POST", "/v1/jobs/" + js + "/heartbeat",
                         R"({"worker_id":)" + ws + R"(,"epoch":1,"progress":{"step":3,"loss":2.1}})");
  ASSERT_EQ(hb.status, 200) << hb.body;
  EXPECT_EQ(body_of(hb)["cancel"], false);
  net::HttpResponse done = call("POST", "/v1/jobs/" + js + "/complete",
                           R"({"worker_id":)" + ws + R"(,"epoch":1,"result":{"final_loss":0.3,"test_accuracy":0.86}})");
  ASSERT_EQ(done.status, 200) << done.body;
  json d = body_of(call("GET", "/v1/jobs/" + js));
  EXPECT_EQ(d["state"], "succeeded");
  EXPECT_DOUBLE_EQ(d["result"]["test_accuracy"].get<double>(), 0.86);
  EXPECT_EQ(d["progress"]["step"], 3);
  json workers = body_of(call("GET", "/v1/workers"));
  ASSERT_EQ(workers["workers"].size(), 1u);
  EXPECT_EQ(workers["workers"][0]["capabilities"]["gpus"][0]["model"], "Tesla T4");
}

TEST_F(Api, MalformedWorkerReportsAreRefusedAndChangeNothing) {
  int64_t w = 0;
  const int64_t job = leased_job(&w);
  const std::string hb = "/v1/jobs/" + std::to_string(job) + "/heartbeat";
  const std::string ws = std::to_string(w);
  expect_refused("POST", hb, "{\"worker_id\":" + ws + ",", 400, "body");
  expect_refused("POST", hb, R"({"worker_id":)" + ws + R"(,"epoch":-1})", 400, "epoch");
  expect_refused("POST", hb, R"({"worker_id":)" + ws + R"(,"epoch":0})", 400, "epoch");
  expect_refused("POST", hb, R"({"worker_id":)" + ws + R"(,"epoch":"1"})", 400, "epoch");
  expect_refused("POST", hb, R"({"worker_id":)" + ws + R"(,"epoch":1.5})", 400, "epoch");
  expect_refused("POST", hb, R"({"epoch":1})", 400, "worker_id");
  expect_refused("POST", hb, R"({"worker_id":)" + ws + R"(,"epoch":1,"progress":[1]})", 400, "progress");
  expect_refused("POST", hb, R"({"worker_id":)" + ws + R"(,"epoch":1,"extra":true})", 400, "extra");
  expect_refused("POST", hb, R"({"worker_id":)" + ws + R"(,"epoch":1})", 415, "Content-Type", "text/plain");
  expect_refused("POST", hb, R"([1])", 400, "body");
  const std::string complete = "/v1/jobs/" + std::to_string(job) + "/complete";
  expect_refused("POST", complete, R"({"worker_id":)" + ws + R"(,"epoch":1})", 400, "result");
  expect_refused("POST", complete, R"({"worker_id":)" + ws + R"(,"epoch":1,"result":{"test_accuracy":"high"}})", 400, "result.test_accuracy");
  // Timing figures no run can have (calibration learns from them).
  expect_refused("POST", hb, R"({"worker_id":)" + ws + R"(,"epoch":1,"progress":{"step_ms":-1}})", 400, "progress.step_ms");
  expect_refused("POST", hb, R"({"worker_id":)" + ws + R"(,"epoch":1,"progress":{"step_ms":1e300}})", 400, "progress.step_ms");
  expect_refused("POST", complete, R"({"worker_id":)" + ws + R"(,"epoch":1,"result":{"elapsed_s":1e300}})", 400, "result.elapsed_s");
  expect_refused("POST", complete, R"({"worker_id":)" + ws + R"(,"epoch":1,"result":{"elapsed_s":-5}})", 400, "result.elapsed_s");
  expect_refused("POST", "/v1/jobs/" + std::to_string(job) + "/fail", R"({"worker_id":)" + ws + R"(,"epoch":1,"error":7})", 400, "error");
  expect_refused("POST", "/v1/workers/register", R"({"name":"x"})", 400, "capabilities");
  expect_refused("POST", "/v1/workers/register", R"({"capabilities":{"gpus":"many"}})", 400, "capabilities.gpus");
  expect_refused("POST", "/v1/workers/register", R"({"capabilities":{"gpus":[{"memory_mb":1}]}})", 400, "capabilities.gpus[0].model");
  expect_refused("POST", "/v1/workers/register", R"({"capabilities":{"cpu_cores":-2}})", 400, "capabilities.cpu_cores");
  expect_refused("POST", "/v1/workers/register", R"({"capabilities":{},"role":"admin"})", 400, "role");
  expect_refused("POST", "/v1/workers/" + ws + "/lease?wait_s=-1", "", 400, "wait_s");
  expect_refused("POST", "/v1/workers/" + ws + "/lease?wait_s=100000", "", 400, "wait_s");
  expect_refused("POST", "/v1/workers/" + ws + "/lease?hurry=1", "", 400, "hurry");
  expect_refused("POST", "/v1/workers/424242/lease", "", 403, "worker_id");  // not this secret's worker
}

TEST_F(Api, StaleEpochIs409AndChangesNothing) {
  int64_t w = 0;
  const int64_t job = leased_job(&w);
  const std::string ws = std::to_string(w), js = std::to_string(job);
  expect_refused("POST", "/v1/jobs/" + js + "/heartbeat", R"({"worker_id":)" + ws + R"(,"epoch":2})", 409, "epoch");
  expect_refused("POST", "/v1/jobs/" + js + "/complete", R"({"worker_id":)" + ws + R"(,"epoch":7,"result":{}})", 409, "epoch");
  expect_refused("POST", "/v1/jobs/" + js + "/fail", R"({"worker_id":)" + ws + R"(,"epoch":5,"error":"x"})", 409, "epoch");
  expect_refused("POST", "/v1/jobs/" + js + "/preempt", R"({"worker_id":)" + ws + R"(,"epoch":3})", 409, "epoch");
}

TEST_F(Api, AWorkerMayActOnlyForItself) {
  int64_t w = 0;
  const int64_t job = leased_job(&w);
  const std::string victim = secret_;
  // A second worker, registered properly, reporting for the first one's lease.
  net::HttpResponse reg = call("POST", "/v1/workers/register", R"({"name":"intruder","capabilities":{}})");
  ASSERT_EQ(reg.status, 201) << reg.body;
  secret_ = body_of(reg)["worker_secret"];
  const std::string lease = R"({"worker_id":)" + std::to_string(w) + R"(,"epoch":1)";
  const std::string js = std::to_string(job);
  expect_refused("POST", "/v1/jobs/" + js + "/heartbeat", lease + "}", 403, "worker_id");
  expect_refused("POST", "/v1/jobs/" + js + "/complete", lease + R"(,"result":{"test_accuracy":1}})", 403, "worker_id");
  expect_refused("POST", "/v1/jobs/" + js + "/fail", lease + R"(,"error":"x"})", 403, "worker_id");
  expect_refused("POST", "/v1/jobs/" + js + "/preempt", lease + "}", 403, "worker_id");
  expect_refused("POST", "/v1/workers/" + std::to_string(w) + "/lease?wait_s=0", "", 403, "worker_id");
  for (const std::string& forged : {std::string(), std::string("jcw_") + std::string(64, 'a'), std::string("jct_x")}) {
    secret_ = forged;
    expect_refused("POST", "/v1/jobs/" + js + "/heartbeat", lease + "}", 403, "X-Worker-Secret");
  }
  secret_ = victim;
  EXPECT_EQ(call("POST", "/v1/jobs/" + js + "/heartbeat", lease + "}").status, 200);
}

TEST_F(Api, AHeartbeatsProgressIsSizeCapped) {
  int64_t w = 0;
  const int64_t job = leased_job(&w);
  const std::string big(20000, 'x');
  expect_refused("POST", "/v1/jobs/" + std::to_string(job) + "/heartbeat",
                 R"({"worker_id":)" + std::to_string(w) + R"(,"epoch":1,"progress":{"note":")" + big + R"("}})", 413,
                 "progress");
}

// Serialising a parsed body recurses once per level: 100,000 levels overflowed the stack. The
// parser stops at net::kMaxJsonDepth, on every JSON route.
TEST_F(Api, BodiesNestedPastTheDepthLimitAreRefusedWhileParsed) {
  int64_t w = 0;
  const int64_t job = leased_job(&w);
  const std::string js = std::to_string(job), lease = R"({"worker_id":)" + std::to_string(w) + R"(,"epoch":1)";
  auto nested = [](size_t depth) { return std::string(depth, '[') + "1" + std::string(depth, ']'); };
  const std::string deep = nested(100000);
  expect_refused("POST", "/v1/jobs/" + js + "/heartbeat", lease + R"(,"progress":{"a":)" + deep + "}}", 400, "body");
  expect_refused("POST", "/v1/jobs/" + js + "/complete", lease + R"(,"result":{"a":)" + deep + "}}", 400, "body");
  expect_refused("POST", "/v1/jobs/" + js + "/fail", lease + R"(,"error":)" + deep + "}", 400, "body");
  expect_refused("POST", "/v1/jobs/" + js + "/cancel", R"({"a":)" + deep + "}", 400, "body");
  expect_refused("POST", "/v1/workers/register", R"({"capabilities":)" + deep + "}", 400, "body");
  expect_refused("POST", "/v1/jobs", R"({"name":"x","command":)" + deep + "}", 400, "body");
  // The limit itself: kMaxJsonDepth levels parse (the body is the first), one more does not.
  const std::string at_limit = lease + R"(,"progress":{"a":)" + nested(net::kMaxJsonDepth - 2) + "}}";
  EXPECT_EQ(call("POST", "/v1/jobs/" + js + "/heartbeat", at_limit).status, 200);
  const std::string past_limit = lease + R"(,"progress":{"a":)" + nested(net::kMaxJsonDepth - 1) + "}}";
  expect_refused("POST", "/v1/jobs/" + js + "/heartbeat", past_limit, 400, "body");
}

TEST_F(Api, CancelAnswersTheJobAndRefusesFinishedOnes) {
  const int64_t job = f_.submit();
  net::HttpResponse r = call("POST", "/v1/jobs/" + std::to_string(job) + "/cancel");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body_of(r)["state"], "cancelled");
  expect_refused("POST", "/v1/jobs/" + std::to_string(job) + "/cancel", R"({"force":true})", 400, "force");
  int64_t w = 0;
  const int64_t done = leased_job(&w);
  ASSERT_TRUE(f_.svc->complete(done, jobs::CompletionReport{{w, 1}, "{}"}));
  expect_refused("POST", "/v1/jobs/" + std::to_string(done) + "/cancel", "", 409, "");
}

TEST_F(Api, HealthzIsOk) {
  net::HttpResponse r = call("GET", "/healthz");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(body_of(r)["status"], "ok");
}

class DegradedApi : public Api {
 protected:
  DegradedApi() : Api(info()) {}
  static ApiInfo info() {
    ApiInfo i;
    i.store_problem = [] { return std::optional<std::string>("the file system of jobctl.db has no space left"); };
    return i;
  }
};

TEST_F(DegradedApi, HealthzSaysDegradedWhileTheStoreCannotWrite) {
  net::HttpResponse r = call("GET", "/healthz");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(body_of(r)["status"], "degraded");
  EXPECT_EQ(body_of(r)["store"], "the file system of jobctl.db has no space left");
}

TEST(Target, ParsesPathAndDecodesQuery) {
  net::HttpRequest r;
  ASSERT_TRUE(net::parse_target("/v1/jobs?state=queued&name=a%20b+c&flag", r));
  EXPECT_EQ(r.path, "/v1/jobs");
  EXPECT_EQ(r.query_param("state"), "queued");
  EXPECT_EQ(r.query_param("name"), "a b c");
  EXPECT_EQ(r.query_param("flag"), "");
  EXPECT_FALSE(r.query_param("missing"));
  EXPECT_FALSE(net::parse_target("/v1/jobs?x=%zz", r));
  EXPECT_FALSE(net::parse_target("/v1/jobs?x=%4", r));
  EXPECT_FALSE(net::parse_target("http://example.com/", r));
  EXPECT_TRUE(net::is_json_content_type("application/json; charset=utf-8"));
  EXPECT_TRUE(net::is_json_content_type("Application/JSON"));
  EXPECT_FALSE(net::is_json_content_type("text/json"));
}

TEST_F(Api, CodeBundlesAreStoredByTheirSha256AndReadBack) {
  jobctl::testing::TempDir dir;
  store::BlobStore blobs(dir.file("bundles"));
  jobs::BundleService bundles(*f_.db, blobs, f_.clock, {});
  ASSERT_TRUE(bundles.reconcile());
  DownloadSlots downloads(4);
  add_bundle_routes(router_, bundles, downloads);
  const std::string bundle = std::string("JCBUNDL1") + std::string(32, '\0') + "payload";
  net::HttpResponse r = call("POST", "/v1/bundles", bundle, "application/octet-stream");
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string sha = body_of(r)["bundle"];
  EXPECT_EQ(sha.size(), 64u);
  EXPECT_EQ(body_of(r)["bytes"], bundle.size());
  net::HttpResponse again = call("POST", "/v1/bundles", bundle, "application/octet-stream");
  EXPECT_EQ(body_of(again)["bundle"], sha) << "content-addressed";
  net::HttpResponse got = call("GET", "/v1/bundles/" + sha);
  ASSERT_EQ(got.status, 200) << got.body;
  auto sent = read_text_file(got.body_path, "bundle");
  ASSERT_TRUE(sent) << "sent from the bundle's file";
  EXPECT_EQ(*sent, bundle);

  net::HttpResponse not_bundle = call("POST", "/v1/bundles", "just text", "application/octet-stream");
  EXPECT_EQ(not_bundle.status, 400);
  EXPECT_EQ(body_of(not_bundle)["error"]["field"], "body");
  EXPECT_EQ(call("GET", "/v1/bundles/" + std::string(64, 'a')).status, 404);
  net::HttpResponse bad_name = call("GET", "/v1/bundles/../../etc");
  EXPECT_NE(bad_name.status, 200);
  net::HttpResponse upper = call("GET", "/v1/bundles/" + std::string(64, 'A'));
  EXPECT_EQ(upper.status, 400);
  EXPECT_EQ(body_of(upper)["error"]["field"], "sha256");
  EXPECT_EQ(router_.match("POST", "/v1/bundles").body().kind, net::RequestBody::Kind::file);
  EXPECT_EQ(router_.match("GET", "/v1/bundles/" + std::string(64, 'a')).body().kind, net::RequestBody::Kind::memory);
}

// ---------------------------------------------------------------- images and registry logins

constexpr const char* kImage = "127.0.0.1:5000/team/train:1";

std::string image_job_spec(const std::string& image = kImage) {
  return R"({"command": ["python3", "train.py"], "resources": {"gpu": "cpu"}, "image": ")" + image + "\"}";
}

std::string sha(char c) { return "sha256:" + std::string(64, c); }

// A CPU worker that runs command jobs, in images too (--allow-commands --container-runtime
// podman); `secret_hash` as registering stores it.
int64_t command_worker(ServiceFixture& f, const std::string& secret_hash = "") {
  jobs::WorkerRegistration reg;
  reg.name = "w";
  reg.secret_hash = secret_hash;
  reg.capabilities.cpu_cores = 4;
  reg.capabilities.commands = true;
  reg.capabilities.containers = "podman";
  auto r = f.svc->register_worker(reg);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? r->worker_id : 0;
}

TEST_F(Api, AnImageReportRecordsTheDigestOnceAndAStaleOneIsRefused) {
  const int64_t job = f_.submit(image_job_spec());
  auto issued = auth::WorkerCredentials::issue();
  ASSERT_TRUE(issued);
  secret_ = issued->secret;
  const int64_t w = command_worker(f_, issued->hash_hex);
  auto l = f_.lease_now(w);
  ASSERT_TRUE(l && *l);
  const std::string js = std::to_string(job), ws = std::to_string(w);
  EXPECT_TRUE(body_of(call("GET", "/v1/jobs/" + js))["image_digest"].is_null()) << "none before the report";
  const std::string report = R"({"worker_id":)" + ws + R"(,"epoch":1,"image":")" + kImage + R"(","digest":")";
  net::HttpResponse r = call("POST", "/v1/jobs/" + js + "/image", report + sha('a') + "\"}");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(body_of(r)["image_digest"], sha('a'));
  EXPECT_EQ(call("POST", "/v1/jobs/" + js + "/image", report + sha('a') + "\"}").status, 200) << "a retry";
  json d = body_of(call("GET", "/v1/jobs/" + js));
  EXPECT_EQ(d["image_digest"], sha('a'));
  EXPECT_EQ(d["spec"]["image"], kImage);
  int image_events = 0;
  for (const auto& ev : d["events"])
    if (ev["type"] == "image") {
      ++image_events;
      EXPECT_EQ(ev["detail"]["message"], std::string("running image ") + kImage + " (" + sha('a') + ")");
      EXPECT_EQ(ev["detail"]["epoch"], 1);
    }
  EXPECT_EQ(image_events, 1) << "a retried report adds no event: " << d["events"].dump();

  const std::string target = "/v1/jobs/" + js + "/image";
  expect_refused("POST", target, R"({"worker_id":)" + ws + R"(,"epoch":2,"image":")" + kImage + R"(","digest":")" +
                                     sha('b') + "\"}",
                 409, "epoch");
  expect_refused("POST", target, report + "sha256:abc\"}", 400, "digest");
  expect_refused("POST", target, report + sha('b') + R"(","extra":1})", 400, "extra");
  expect_refused("POST", target,
                 R"({"worker_id":)" + ws + R"(,"epoch":1,"image":"127.0.0.1:5000/other:1","digest":")" + sha('b') + "\"}",
                 400, "image");
  // A job without an image has nothing to report; a finished job's lease is over.
  ASSERT_TRUE(f_.svc->cancel_job(job));
  expect_refused("POST", target, report + sha('b') + "\"}", 409, "epoch");
  EXPECT_EQ(body_of(call("GET", "/v1/jobs/" + js))["image_digest"], sha('a'));
}

// Registry logins through the routes, with auth on: each user's own, the password sealed in
// the database and never answered back; a lease carries its job owner's login only.
class RegistryLogins : public ::testing::Test {
 protected:
  void SetUp() override {
    router_ = make_api_router(*f_.svc);
    add_registry_credential_routes(router_, *f_.registry_credentials);
    auth::SecurityOptions options;
    options.auth.enabled = true;
    options.limits.requests_per_s = 0;
    auto installed = install_hardening(router_, *f_.svc, *f_.db, f_.clock, options);
    ASSERT_TRUE(installed) << installed.error().message;
    hardening_ = std::move(*installed);
    alice_ = hardening_->tokens.create("alice", "user")->secret;
    bob_ = hardening_->tokens.create("bob", "user")->secret;
  }

  net::HttpResponse call(const std::string& method, const std::string& target, const std::string& token,
                         const std::string& body = "") {
    net::HttpRequest req;
    req.method = method;
    req.target = target;
    req.body = body;
    req.content_type = body.empty() ? "" : "application/json";
    req.set_header("Authorization", "Bearer " + token);
    if (auto st = net::parse_target(target, req); !st) return net::error_response(st.error());
    std::promise<net::HttpResponse> p;
    auto fut = p.get_future();
    router_.handle(req, [&p](net::HttpResponse r) { p.set_value(std::move(r)); });
    return fut.get();
  }

  void expect_refused(const std::string& method, const std::string& target, const std::string& body, int status,
                      const std::string& field) {
    const std::string before = f_.dump();
    net::HttpResponse r = call(method, target, alice_, body);
    EXPECT_EQ(r.status, status) << method << " " << target << " " << body << " -> " << r.body;
    const json j = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
    EXPECT_EQ(j["error"]["field"], field) << r.body;
    EXPECT_EQ(r.body.find(kPassword), std::string::npos);
    EXPECT_EQ(f_.dump(), before) << "the store changed after " << method << " " << target;
  }

  // Every byte SQLite wrote: the database and its write-ahead log.
  std::string database_bytes() {
    std::string bytes;
    for (const char* suffix : {"", "-wal"})
      if (auto b = read_text_file(f_.dir.file(std::string("jobctl.db") + suffix), "db")) bytes += *b;
    return bytes;
  }

  static constexpr const char* kPassword = "hunter2-Reg1stry-pa55word";
  ServiceFixture f_;
  net::Router router_;
  std::unique_ptr<Hardening> hardening_;
  std::string alice_, bob_;
};

TEST_F(RegistryLogins, StoredSealedListedWithoutThePasswordAndDeleted) {
  const std::string login = std::string(R"({"username":"alice-ci","password":")") + kPassword + "\"}";
  net::HttpResponse put = call("PUT", "/v1/registry-credentials/127.0.0.1:5000", alice_, login);
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(json::parse(put.body), json({{"registry", "127.0.0.1:5000"}, {"username", "alice-ci"}}));
  ASSERT_EQ(call("PUT", "/v1/registry-credentials/registry.example.com", alice_,
                 R"({"username":"a","password":"other-password"})")
                .status,
            200);

  net::HttpResponse listed = call("GET", "/v1/registry-credentials", alice_);
  ASSERT_EQ(listed.status, 200) << listed.body;
  const json logins = json::parse(listed.body)["registry_credentials"];
  ASSERT_EQ(logins.size(), 2u) << listed.body;
  EXPECT_EQ(logins[0]["registry"], "127.0.0.1:5000");
  EXPECT_EQ(logins[0]["username"], "alice-ci");
  EXPECT_FALSE(logins[0].contains("password"));
  EXPECT_EQ(listed.body.find(kPassword), std::string::npos);
  EXPECT_EQ(json::parse(call("GET", "/v1/registry-credentials", bob_).body)["registry_credentials"], json::array())
      << "bob sees none of alice's";

  // Sealed: neither the database nor its log holds the password; the key is a file of its own, 0600.
  const std::string bytes = database_bytes();
  ASSERT_NE(bytes.find("alice-ci"), std::string::npos) << "the username is stored (the search works)";
  EXPECT_EQ(bytes.find(kPassword), std::string::npos) << "the password is in the database in clear";
  struct stat key {};
  ASSERT_EQ(::stat(f_.dir.file("registry-credentials.key").c_str(), &key), 0);
  EXPECT_EQ(key.st_mode & 0777, 0600u);
  EXPECT_EQ(key.st_size, 32);

  EXPECT_EQ(call("DELETE", "/v1/registry-credentials/127.0.0.1:5000", bob_).status, 404) << "not bob's to delete";
  net::HttpResponse deleted = call("DELETE", "/v1/registry-credentials/127.0.0.1:5000", alice_);
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(json::parse(call("GET", "/v1/registry-credentials", alice_).body)["registry_credentials"].size(), 1u);
  EXPECT_EQ(call("DELETE", "/v1/registry-credentials/127.0.0.1:5000", alice_).status, 404);
}

TEST_F(RegistryLogins, BadRegistriesAndBodiesAre400NamingTheField) {
  const std::string ok = std::string(R"({"username":"u","password":")") + kPassword + "\"}";
  expect_refused("PUT", "/v1/registry-credentials/team", ok, 400, "registry");  // no dot, no port: not a host
  expect_refused("PUT", "/v1/registry-credentials/bad_host.example.com", ok, 400, "registry");
  expect_refused("PUT", "/v1/registry-credentials/host.example.com:99999", ok, 400, "registry");
  expect_refused("PUT", "/v1/registry-credentials/host.example.com", R"({"password":"x"})", 400, "username");
  expect_refused("PUT", "/v1/registry-credentials/host.example.com", R"({"username":"u"})", 400, "password");
  expect_refused("PUT", "/v1/registry-credentials/host.example.com", R"({"username":"u","password":""})", 400, "password");
  expect_refused("PUT", "/v1/registry-credentials/host.example.com", R"({"username":"u","password":7})", 400, "password");
  expect_refused("PUT", "/v1/registry-credentials/host.example.com",
                 R"({"username":"u","password":")" + std::string(8193, 'p') + "\"}", 400, "password");
  expect_refused("PUT", "/v1/registry-credentials/host.example.com", R"({"username":"u\n","password":"p"})", 400,
                 "username");
  expect_refused("PUT", "/v1/registry-credentials/host.example.com",
                 std::string(R"({"username":"u","password":")") + kPassword + R"(","email":"x"})", 400, "email");
  expect_refused("PUT", "/v1/registry-credentials/host.example.com", "", 400, "body");
  expect_refused("DELETE", "/v1/registry-credentials/team", "", 400, "registry");
  // The route's body limit (the server refuses past it before reading: net/router.h).
  EXPECT_EQ(router_.match("PUT", "/v1/registry-credentials/a.io").body().max_bytes, 32u * 1024);
}

TEST_F(RegistryLogins, ALeaseCarriesItsOwnersLoginForItsImagesRegistryOnly) {
  ASSERT_EQ(call("PUT", "/v1/registry-credentials/127.0.0.1:5000", alice_,
                 std::string(R"({"username":"alice-ci","password":")") + kPassword + "\"}")
                .status,
            200);
  auto submit = [&](const std::string& owner, const std::string& spec) {
    auto job = f_.svc->submit_job(spec, jobs::SubmitContext{owner, "", true});
    EXPECT_TRUE(job) << (job ? "" : job.error().message);
    return job ? job->id : 0;
  };
  const int64_t alices = submit("alice", image_job_spec());
  const int64_t bobs = submit("bob", image_job_spec());  // the same registry, another owner
  const int64_t elsewhere = submit("alice", image_job_spec("registry.example.com/team/train:1"));
  const int64_t plain = submit("alice", R"({"command": ["python3", "train.py"], "resources": {"gpu": "cpu"}})");
  const int64_t w = command_worker(f_);
  std::map<int64_t, json> offers;
  for (int i = 0; i < 4; ++i) {
    auto grant = f_.lease_now(w);
    ASSERT_TRUE(grant && *grant) << i;
    offers[(*grant)->job_id] = lease_json(**grant);
  }
  ASSERT_EQ(offers.size(), 4u);
  ASSERT_TRUE(offers[alices].contains("registry_credential")) << offers[alices].dump();
  EXPECT_EQ(offers[alices]["registry_credential"],
            json({{"registry", "127.0.0.1:5000"}, {"username", "alice-ci"}, {"password", kPassword}}));
  for (int64_t other : {bobs, elsewhere, plain}) {
    EXPECT_FALSE(offers[other].contains("registry_credential")) << other << ": " << offers[other].dump();
    EXPECT_EQ(offers[other].dump().find(kPassword), std::string::npos);
  }
  // Nowhere but the offer: not the job, its spec or its events.
  const std::string job = call("GET", "/v1/jobs/" + std::to_string(alices), alice_).body;
  EXPECT_NE(job.find("\"events\""), std::string::npos) << job;
  EXPECT_EQ(job.find(kPassword), std::string::npos) << job;
  EXPECT_EQ(f_.dump().find(kPassword), std::string::npos);
}

TEST(CredentialSeal, TheKeyIsMadeOnceAndWhatItSealedOpensOnlyUnderItsContext) {
  jobctl::testing::TempDir dir;
  const std::string key = dir.file("registry-credentials.key");
  auth::CredentialSeal reader(key);
  auto before = reader.unseal(std::string(40, 'x'), "c");
  ASSERT_FALSE(before);
  EXPECT_EQ(before.error().code, ErrorCode::io) << "no key: nothing opens, and none is made";
  EXPECT_NE(::access(key.c_str(), F_OK), 0);
  auth::CredentialSeal seal(key);
  auto sealed = seal.seal("p4ss", "alice|r.io|u");
  ASSERT_TRUE(sealed) << sealed.error().message;
  EXPECT_EQ(sealed->find("p4ss"), std::string::npos);
  auth::CredentialSeal restarted(key);  // a restarted jobctld reads the same key
  EXPECT_EQ(*restarted.unseal(*sealed, "alice|r.io|u"), "p4ss");
  EXPECT_FALSE(restarted.unseal(*sealed, "bob|r.io|u")) << "another row's context";
  std::string damaged = *sealed;
  damaged[14] ^= 1;
  EXPECT_FALSE(restarted.unseal(damaged, "alice|r.io|u"));
  ASSERT_TRUE(restarted.seal("again", "c")) << "sealing again keeps the key";
  EXPECT_EQ(*auth::CredentialSeal(key).unseal(*sealed, "alice|r.io|u"), "p4ss");
}

}  // namespace
}  // namespace jobctl::daemon::http
