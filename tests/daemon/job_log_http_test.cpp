// The jobs' logs through a real jobctld over HTTP (docs/api.md, docs/log-format.md): each line
// keeps the time its worker read it; `since`, `tail`, `timestamps` and the download; a move's
// new lease continues the same log; SIGKILL and a restart keep every acknowledged line; the log
// is deleted a retention period after its job ended. The test acts as the worker (the protocol's
// own calls), so the times it sends are known.
//
// Environment: JOBCTLD (the binary).
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "client/api_client.h"
#include "tests/support/process.h"
#include "tests/support/server_process.h"
#include "tests/support/poll.h"
#include "tests/support/temp_dir.h"

namespace {

using namespace std::chrono_literals;
using jobctl::client::ApiClient;
using nlohmann::json;

constexpr int64_t kT0 = 1795000000123;  // 2026-11-18T11:06:40.123Z

// jobctld as a child process over one data directory: started, killed with SIGKILL, started again.
class Jobctld {
 public:
  Jobctld(const jobctl::testing::TempDir& dir, const json& config)
      : argv_{jobctl::testing::env_or_fail("JOBCTLD"), "--config", dir.file("config.json"), "--listen", "127.0.0.1:0",
              "--data-dir", dir.file("data")} {
    std::ofstream(dir.file("config.json")) << config.dump();
  }
  // Its URL ("" when it did not start).
  std::string start() {
    process_.emplace(argv_);
    return process_->ok() ? process_->url() : "";
  }
  void kill9() {
    if (process_) process_->process().stop(SIGKILL, 10s);
    process_.reset();
  }

 private:
  std::vector<std::string> argv_;
  std::optional<jobctl::testing::ServerProcess> process_;
};

json config(int64_t retention_s = 3600) {
  return json{{"placement", {{"enabled", false}}}, {"logs", {{"retention_s", retention_s}}}};
}

const std::string kSpec =
    R"({"name":"logs","model":{"kind":"mlp","hidden":[8]},"data":{"dataset":"synthetic","samples":64,"features":4,"classes":2}})";

// A worker of the test's own: registered, leasing, heartbeating lines with the times it chooses.
struct TestWorker {
  explicit TestWorker(const std::string& url) : api(url) {
    auto reg = api.register_worker(json{{"name", "w"}, {"capabilities", {{"cpu_cores", 2}}}});
    EXPECT_TRUE(reg) << (reg ? "" : reg.error().message);
    if (!reg) return;
    id = (*reg)["worker_id"];
    api.set_worker_secret((*reg)["worker_secret"]);
  }
  // Leases the next job; its epoch.
  int64_t lease(int64_t job) {
    auto l = api.lease(id, 10);
    EXPECT_TRUE(l && *l);
    if (!l || !*l) return 0;
    EXPECT_EQ((**l)["job_id"], job);
    return (**l)["epoch"];
  }
  jobctl::Expected<json> beat(int64_t job, int64_t epoch, const json& lines) {
    return api.heartbeat(job, json{{"worker_id", id}, {"epoch", epoch}, {"log", lines}});
  }
  ApiClient api;
  int64_t id = 0;
};

json get(ApiClient& api, const std::string& path, long want = 200) {
  auto r = api.http().request("GET", path);
  EXPECT_TRUE(r);
  if (!r) return json();
  EXPECT_EQ(r->status, want) << path << ": " << r->body;
  return json::parse(r->body, nullptr, false);
}

std::vector<std::string> texts(const json& page) {
  std::vector<std::string> out;
  for (const auto& l : page["lines"]) out.push_back(l["text"]);
  return out;
}

TEST(JobLogHttp, LinesKeepTheirTimesAcrossLeasesAndASigkilledJobctld) {
  jobctl::testing::TempDir dir;
  Jobctld d(dir, config());
  std::string url = d.start();
  ASSERT_FALSE(url.empty()) << "jobctld did not start";
  ApiClient user(url);
  auto job = user.submit_job(kSpec);
  ASSERT_TRUE(job) << job.error().message;
  const int64_t id = (*job)["id"];
  const std::string log = "/v1/jobs/" + std::to_string(id) + "/log";

  TestWorker w(url);
  const int64_t e1 = w.lease(id);
  ASSERT_TRUE(w.beat(id, e1, json::array({{{"time_ms", kT0}, {"text", "first"}},
                                          {{"time_ms", kT0 + 1000}, {"text", "second"}},
                                          {{"time_ms", kT0 + 2000}, {"text", "third"}}})));
  json page = get(user, log);
  ASSERT_EQ(page["lines"].size(), 3u) << page.dump();
  EXPECT_EQ(page["lines"][1]["time_ms"], kT0 + 1000);  // the worker's time, not the arrival's
  EXPECT_EQ(page["lines"][2]["n"], 3);
  EXPECT_EQ(page["next"], 3);
  EXPECT_EQ(page["text"], "first\nsecond\nthird\n");
  EXPECT_EQ(texts(get(user, log + "?since=" + std::to_string(kT0 + 1000))), (std::vector<std::string>{"second", "third"}));
  EXPECT_EQ(texts(get(user, log + "?tail=1")), (std::vector<std::string>{"third"}));
  EXPECT_EQ(get(user, log + "?tail=2&timestamps=true")["text"],
            "2026-11-18T11:06:41.123Z second\n2026-11-18T11:06:42.123Z third\n");
  // Bad parameters: 400 naming the field.
  for (const auto& [query, field] : std::vector<std::pair<std::string, std::string>>{
           {"since=yesterday", "since"}, {"tail=0", "tail"}, {"timestamps=maybe", "timestamps"},
           {"after=-1", "after"}, {"limit=0", "limit"}, {"colour=red", "colour"}}) {
    json e = get(user, log + "?" + query, 400);
    EXPECT_EQ(e["error"]["field"], field) << query << ": " << e.dump();
  }
  get(user, "/v1/jobs/999/log", 404);

  // The job moves (given back, leased again): the same log goes on, numbered on.
  ASSERT_TRUE(w.api.preempt(id, json{{"worker_id", w.id}, {"epoch", e1}, {"reason", "moved"}}));
  const int64_t e2 = w.lease(id);
  ASSERT_GT(e2, e1);
  ASSERT_TRUE(w.beat(id, e2, json::array({{{"time_ms", kT0 + 5000}, {"text", "after the move"}}})));
  page = get(user, log + "?after=3");
  ASSERT_EQ(page["lines"].size(), 1u);
  EXPECT_EQ(page["lines"][0]["n"], 4);
  EXPECT_EQ(page["lines"][0]["text"], "after the move");

  // SIGKILL right after an acknowledged heartbeat; the restarted jobctld has every line.
  ASSERT_TRUE(w.beat(id, e2, json::array({{{"time_ms", kT0 + 6000}, {"text", "acknowledged, then killed"}}})));
  d.kill9();
  url = d.start();
  ASSERT_FALSE(url.empty()) << "jobctld did not start again";
  ApiClient again(url);
  page = get(again, log);
  EXPECT_EQ(texts(page), (std::vector<std::string>{"first", "second", "third", "after the move",
                                                   "acknowledged, then killed"}));
  EXPECT_EQ(page["lines"][4]["time_ms"], kT0 + 6000);

  // The whole file, as docs/log-format.md describes it.
  auto file = again.http().request("GET", log + "/download");
  ASSERT_TRUE(file);
  EXPECT_EQ(file->status, 200);
  EXPECT_EQ(file->content_type.rfind("text/plain", 0), 0u) << file->content_type;
  EXPECT_EQ(file->body.substr(0, 63), "1 2026-11-18T11:06:40.123Z first\n2 2026-11-18T11:06:41.123Z sec");
  std::ifstream stored(dir.file("data") + "/logs/" + std::to_string(id) + ".log", std::ios::binary);
  std::ostringstream bytes;
  bytes << stored.rdbuf();
  EXPECT_EQ(file->body, bytes.str());
}

TEST(JobLogHttp, ALogIsDeletedARetentionPeriodAfterItsJobEnded) {
  jobctl::testing::TempDir dir;
  Jobctld d(dir, config(/*retention_s=*/2));
  const std::string url = d.start();
  ASSERT_FALSE(url.empty()) << "jobctld did not start";
  ApiClient user(url);
  const int64_t running = (*user.submit_job(kSpec))["id"];
  const int64_t ending = (*user.submit_job(kSpec))["id"];
  TestWorker w(url);
  const int64_t e_running = w.lease(running);
  const int64_t e_ending = w.lease(ending);
  ASSERT_TRUE(w.beat(running, e_running, json::array({{{"time_ms", kT0}, {"text", "still running"}}})));
  ASSERT_TRUE(w.beat(ending, e_ending, json::array({{{"time_ms", kT0}, {"text", "about to end"}}})));
  ASSERT_TRUE(w.api.complete(ending, json{{"worker_id", w.id}, {"epoch", e_ending}, {"result", json::object()}}));
  const std::string ended_log = dir.file("data") + "/logs/" + std::to_string(ending) + ".log";
  ASSERT_TRUE(jobctl::testing::poll_until([&] { return !std::filesystem::exists(ended_log); }))
      << "the ended job's log was never deleted";
  EXPECT_TRUE(get(user, "/v1/jobs/" + std::to_string(ending) + "/log")["lines"].empty());
  get(user, "/v1/jobs/" + std::to_string(ending) + "/log/download", 404);
  // A running job's log is kept however old.
  EXPECT_EQ(texts(get(user, "/v1/jobs/" + std::to_string(running) + "/log")), (std::vector<std::string>{"still running"}));
}

}  // namespace
