// jobctld's HTTP server over real loopback sockets with a temporary SQLite file: limits, errors,
// keep-alive, timeouts, long-polls, fencing, pagination and graceful shutdown.
#include "net/server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "client/api_client.h"
#include "client/http_client.h"
#include "daemon/http/api_routes.h"
#include "daemon/jobs/job_matcher.h"
#include "daemon/jobs/job_service.h"
#include "base/ticker.h"
#include "daemon/store/store.h"
#include "tests/daemon/in_process_daemon.h"
#include "tests/daemon/service_support.h"
#include "tests/support/raw_connection.h"
#include "tests/support/temp_dir.h"
#include "tests/support/poll.h"

namespace jobctl::daemon::http {
namespace {

using jobctl::client::ApiClient;
using jobctl::client::HttpClient;
using jobctl::daemon::testing::Daemon;
using jobctl::daemon::testing::mlp_spec;
using jobctl::testing::RawConnection;
using jobctl::testing::status_of;
using nlohmann::json;

json error_of(const client::HttpResult& r) {
  json j = json::parse(r.body, nullptr, false);
  return j.is_object() && j.contains("error") ? j["error"] : json();
}

TEST(HttpServer, BadRequestsGetTheir4xxAndLeaveTheStoreUnchanged) {
  Daemon d;
  ApiClient api(d.url());
  ASSERT_TRUE(api.submit_job(mlp_spec()));
  auto reg = api.register_worker(json{{"name", "w"}, {"capabilities", {{"cpu_cores", 2}}}});
  ASSERT_TRUE(reg);
  const int64_t w = (*reg)["worker_id"];
  api.set_worker_secret((*reg)["worker_secret"]);
  auto lease = api.lease(w, 0);
  ASSERT_TRUE(lease && *lease);
  const std::string hb = "/v1/jobs/" + std::to_string((**lease)["job_id"].get<int64_t>()) + "/heartbeat";
  const std::string before = d.dump();

  HttpClient http(d.url());
  http.set_worker_secret((*reg)["worker_secret"]);
  struct Case {
    std::string path, body;
    long status;
    std::string field;
  };
  const std::string big(10 * 1000 * 1000, 'x');
  for (const Case& c : std::vector<Case>{
           {"/v1/jobs", R"({"model":{"kind":"mlp"},"data":)", 400, "body"},
           {"/v1/jobs", mlp_spec(R"(,"surprise":1)"), 400, "surprise"},
           {"/v1/jobs", mlp_spec(R"(,"train":{"batch_size":"big"})"), 400, "train.batch_size"},
           {"/v1/jobs", mlp_spec(R"(,"train":{"epochs":-1})"), 400, "train.epochs"},
           {"/v1/jobs", big, 413, "body"},
           {"/v1/jobs", "{\"name\":\"" + big + "\"}", 413, "body"},
           {hb, R"({"worker_id":)" + std::to_string(w) + R"(,"epoch":-4})", 400, "epoch"},
           {hb, R"({"worker_id":)" + std::to_string(w) + R"(,"epoch":2})", 409, "epoch"},
       }) {
    auto r = http.request("POST", c.path, c.body);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->status, c.status) << c.body.substr(0, 60) << " -> " << r->body;
    EXPECT_EQ(error_of(*r)["field"], c.field) << r->body;
    EXPECT_NE(r->content_type.find("application/json"), std::string::npos);
  }
  EXPECT_EQ(d.dump(), before);
  // The server still answers after all that.
  auto health = api.health();
  ASSERT_TRUE(health);
  EXPECT_EQ((*health)["status"], "ok");
}

TEST(HttpServer, HeaderLimitMalformedRequestsAndKeepAlive) {
  Daemon d;
  {
    RawConnection c(d.port());
    ASSERT_TRUE(c.connected());
    c.send("GET /healthz HTTP/1.1\r\nHost: " + c.host() + "\r\nX-Big: " + std::string(9000, 'a') + "\r\n\r\n");
    EXPECT_EQ(status_of(c.read_response()), 431);
  }
  {
    RawConnection c(d.port());
    c.send("THIS IS NOT HTTP\r\n\r\n");
    EXPECT_EQ(status_of(c.read_response()), 400);
  }
  {
    RawConnection c(d.port());
    c.send("GET /healthz HTTP/1.1\r\nHost: " + c.host() + "\r\n\r\n");
    EXPECT_EQ(status_of(c.read_response()), 200);
    c.send("GET /v1/jobs HTTP/1.1\r\nHost: " + c.host() + "\r\n\r\n");  // same connection: keep-alive
    EXPECT_EQ(status_of(c.read_response()), 200);
    c.send("GET /healthz HTTP/1.1\r\nHost: " + c.host() + "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(c.read_response()), 200);
    EXPECT_TRUE(c.closed_by_peer());
  }
}

TEST(HttpServer, AnIdleConnectionIsClosedAfterTheReadTimeout) {
  net::ServerOptions so;
  so.read_timeout_ms = 300;
  // Every other timeout an hour away: only the read timeout can close it within the wait.
  so.header_timeout_ms = so.idle_timeout_ms = so.write_timeout_ms = 3'600'000;
  Daemon d(so);
  RawConnection c(d.port());
  ASSERT_TRUE(c.connected());
  c.send("GET /healthz HTTP/1.1\r\nHost: " + c.host() + "\r\n");  // never finishes its headers
  EXPECT_TRUE(c.closed_by_peer(std::chrono::seconds(60)));
}

TEST(HttpServer, ConfiguredBodyLimit) {
  net::ServerOptions so;
  so.max_body_bytes = 4096;
  Daemon d(so);
  HttpClient http(d.url());
  auto r = http.request("POST", "/v1/jobs", mlp_spec(R"(,"name":")" + std::string(5000, 'n') + "\""));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  auto ok = http.request("POST", "/v1/jobs", mlp_spec());
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 201);
}

TEST(HttpServer, PaginationAndConcurrentSubmitters) {
  Daemon d;
  constexpr int kThreads = 6, kEach = 25;
  std::atomic<int> created{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      ApiClient api(d.url());
      for (int i = 0; i < kEach; ++i)
        if (api.submit_job(mlp_spec())) created++;
    });
  for (auto& t : threads) t.join();
  ASSERT_EQ(created.load(), kThreads * kEach);
  ApiClient api(d.url());
  std::vector<int64_t> ids;
  std::string after;
  for (int page = 0; page < 100; ++page) {
    auto r = api.list_jobs(std::string("queued"), 40, after);
    ASSERT_TRUE(r) << r.error().message;
    for (const auto& j : (*r)["jobs"]) ids.push_back(j["id"]);
    if ((*r)["next"].is_null()) break;
    after = (*r)["next"];
  }
  ASSERT_EQ(ids.size(), static_cast<size_t>(kThreads * kEach));
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_LT(ids[i - 1], ids[i]);
}

TEST(HttpServer, ALongPollIsAnsweredBySubmissionWithoutHoldingAHandlerThread) {
  net::ServerOptions so;
  so.handler_threads = 1;  // a long-poll that held the only handler thread would block the submit
  Daemon d(so);
  ApiClient api(d.url());
  auto reg = api.register_worker(json{{"capabilities", json::object()}});
  ASSERT_TRUE(reg);
  const int64_t w = (*reg)["worker_id"];
  auto poll = std::async(std::launch::async, [&] {
    ApiClient worker(d.url());
    worker.set_worker_secret((*reg)["worker_secret"]);
    return worker.lease(w, 20);
  });
  jobctl::testing::poll_until([&] { return d.svc().waiting_workers() != 0; });
  ASSERT_EQ(d.svc().waiting_workers(), 1u);
  auto job = api.submit_job(mlp_spec());
  ASSERT_TRUE(job);
  ASSERT_EQ(poll.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto got = poll.get();
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((**got)["job_id"], (*job)["id"]);
}

TEST(HttpServer, ALongPollEndsWith204AtItsDeadline) {
  Daemon d;
  ApiClient api(d.url());
  auto reg = api.register_worker(json{{"capabilities", json::object()}});
  ASSERT_TRUE(reg);
  api.set_worker_secret((*reg)["worker_secret"]);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = api.lease((*reg)["worker_id"], 1);
  ASSERT_TRUE(r);
  EXPECT_FALSE(*r);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(900));
}

TEST(HttpServer, GracefulShutdownAnswersInFlightLongPollsAndStopsAccepting) {
  Daemon d;
  ApiClient api(d.url());
  auto reg = api.register_worker(json{{"capabilities", json::object()}});
  ASSERT_TRUE(reg);
  const int64_t w = (*reg)["worker_id"];
  auto poll = std::async(std::launch::async, [&] {
    ApiClient worker(d.url());
    worker.set_worker_secret((*reg)["worker_secret"]);
    return worker.lease(w, 60);
  });
  jobctl::testing::poll_until([&] { return d.svc().waiting_workers() != 0; });
  // Shutdown answers the poll rather than waiting it out: the answer comes while shutdown runs
  // (on its own thread) and long before the poll's own 60 s deadline.
  auto stopping = std::async(std::launch::async, [&] { d.shutdown(); });
  ASSERT_EQ(poll.wait_for(std::chrono::seconds(40)), std::future_status::ready);
  stopping.get();
  auto r = poll.get();
  ASSERT_TRUE(r) << r.error().message;  // answered (204), not cut off
  EXPECT_FALSE(*r);
  ApiClient late(d.url());
  auto refused = late.health();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::unavailable);
}

}  // namespace
}  // namespace jobctl::daemon::http
