// Durability under SIGKILL (docs/operations.md): concurrent clients submit at least
// 10,000 jobs while jobctld is killed with SIGKILL at random moments and restarted, at least 20
// times. Every submit carries a client-chosen Idempotency-Key and is retried with the same key
// until it gets a 201, so a lost answer never becomes a duplicate. Afterwards every job that got
// a 201 is stored exactly once, with the id its 201 named, there is no job that nobody submitted,
// and PRAGMA integrity_check is ok.
//
// Environment: JOBCTLD (the binary); JOBCTL_CRASH_JOBS / JOBCTL_CRASH_KILLS to change the sizes.
#include <signal.h>
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/text_file.h"
#include "client/http_client.h"
#include "process/child.h"
#include "process/line_reader.h"
#include "tests/support/temp_dir.h"

namespace {

using namespace std::chrono_literals;
using nlohmann::json;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// jobctld as a child process: started, its start-up line read, killed with SIGKILL. Its stderr
// is appended to a log file (one for all its lives).
class Daemon {
 public:
  Daemon(std::string binary, std::string data_dir, std::string log)
      : binary_(std::move(binary)), data_dir_(std::move(data_dir)), log_(std::move(log)) {}

  // Starts jobctld on `listen`; returns its port (0 on failure).
  int start(const std::string& listen) {
    auto c = jobctl::process::Child::spawn(
        {binary_, "--listen", listen, "--data-dir", data_dir_, "--io-threads", "2", "--handler-threads", "8"},
        {.stdout_to = jobctl::process::Output::pipe(), .stderr_to = jobctl::process::Output::append_to(log_)});
    if (!c) return 0;
    child_ = std::move(*c);
    auto line = jobctl::process::LineReader(child_->stdout_fd()).next(30s);
    child_->close_stdout();
    json j = json::parse(line.value_or(""), nullptr, false);
    if (j.is_discarded() || !j.contains("port")) return 0;
    return j["port"].get<int>();
  }

  void kill9() {
    if (child_) child_->kill();
    child_.reset();
  }

  // SIGTERM; "" when it exited 0 (within two minutes: the last start may still be placing ten
  // thousand queued jobs on a loaded machine), else how it ended and the end of its log.
  std::string terminate() {
    if (!child_) return "jobctld was not running";
    const auto status = child_->terminate(SIGTERM, 120s);
    child_.reset();
    if (status.success()) return "";
    auto text = jobctl::read_text_file(log_, "log");
    std::string log = text ? *text : "(its log could not be read: " + text.error().message + ")";
    if (log.size() > 4000) log = log.substr(log.size() - 4000);
    return (status.exited ? "exit code " + std::to_string(status.code) : "killed by signal " + std::to_string(status.signal)) +
           "; the end of its log:\n" + log;
  }

 private:
  std::string binary_, data_dir_, log_;
  std::unique_ptr<jobctl::process::Child> child_;  // destroyed while running: killed
};

std::string spec_named(const std::string& name) {
  return R"({"name":")" + name +
         R"(","model":{"kind":"mlp","hidden":[8]},"data":{"dataset":"synthetic","samples":64,"features":4,"classes":2}})";
}

TEST(CrashTest, EveryAcknowledgedSubmitSurvivesRepeatedSigkillExactlyOnce) {
  const char* binary = std::getenv("JOBCTLD");
  ASSERT_NE(binary, nullptr) << "JOBCTLD must name the jobctld binary";
  const int total_jobs = env_int("JOBCTL_CRASH_JOBS", 10000);
  const int min_kills = env_int("JOBCTL_CRASH_KILLS", 20);
  const int clients = 8;
  jobctl::testing::TempDir tmp;
  Daemon daemon(binary, tmp.file("data"), tmp.file("jobctld.log"));
  const int port = daemon.start("127.0.0.1:0");
  ASSERT_GT(port, 0) << "jobctld did not start";
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  const std::string url = "http://" + listen;

  std::atomic<int> next{0};
  std::atomic<int> acked_count{0};
  std::atomic<int> lost_answers{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::map<std::string, int64_t> acked;  // idempotency key -> id in its 201
  std::vector<std::string> failures;

  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      jobctl::client::HttpClientOptions o;
      o.connect_timeout_ms = 1000;
      o.timeout_ms = 5000;
      for (;;) {
        const int n = next.fetch_add(1);
        if (n >= total_jobs) break;
        const std::string key = "crash-" + std::to_string(n);
        const std::string body = spec_named(key);
        for (int attempt = 0;; ++attempt) {
          if (stop.load()) return;
          // A fresh connection per attempt after a failure: the old one died with the daemon.
          jobctl::client::HttpClient http(url, o);
          auto r = http.request("POST", "/v1/jobs", body, 0, {"Idempotency-Key: " + key});
          if (!r) {  // no answer: the daemon is down (or died mid-request); retry, same key
            if (attempt == 0) lost_answers.fetch_add(1);
            std::this_thread::sleep_for(20ms);
            continue;
          }
          if (r->status == 201) {
            json j = json::parse(r->body, nullptr, false);
            std::lock_guard<std::mutex> lock(mu);
            if (j.is_discarded() || !j.contains("id")) {
              failures.push_back("201 without an id: " + r->body);
            } else {
              acked[key] = j["id"].get<int64_t>();
            }
            acked_count.fetch_add(1);
            break;
          }
          if (r->status == 503) {  // shutting down: retry
            std::this_thread::sleep_for(20ms);
            continue;
          }
          std::lock_guard<std::mutex> lock(mu);
          failures.push_back("HTTP " + std::to_string(r->status) + ": " + r->body);
          break;
        }
      }
    });
  }

  // The killer: SIGKILL while submits are in flight, then restart. Kills are spread over the run
  // by progress (one every total_jobs / (planned + 1) acknowledgements, a random 0-30 ms later, so
  // each lands at a random point of the requests in flight): the run makes at least `planned`
  // kills however fast the machine acknowledges.
  std::mt19937 rng(12345);
  const int planned = min_kills + 5;
  int kills = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto timed_out = [&] { return std::chrono::steady_clock::now() - t0 > 300s; };
  while (acked_count.load() < total_jobs && !timed_out()) {
    const int threshold = static_cast<int>(int64_t{total_jobs} * (kills + 1) / (planned + 1));
    while (acked_count.load() < std::min(threshold, total_jobs) && !timed_out()) std::this_thread::sleep_for(1ms);
    if (acked_count.load() >= total_jobs) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 30)(rng)));
    daemon.kill9();
    ++kills;
    int p = 0;
    for (int tries = 0; tries < 50 && p == 0; ++tries) {
      p = daemon.start(listen);
      if (p == 0) std::this_thread::sleep_for(100ms);
    }
    ASSERT_EQ(p, port) << "jobctld did not restart after kill " << kills;
  }
  if (timed_out()) stop = true;
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string ended = daemon.terminate();
  ASSERT_EQ(ended, "") << "jobctld did not exit 0 on SIGTERM after the run";
  std::printf("crash test: %d jobs acknowledged by %d clients in %.1f s with %d SIGKILLs; %d submits lost their answer and were retried\n",
              acked_count.load(), clients, seconds, kills, lost_answers.load());

  EXPECT_TRUE(failures.empty()) << failures.size() << " failures, first: " << failures.front();
  EXPECT_GE(kills, min_kills) << "the submits finished before enough kills; raise JOBCTL_CRASH_JOBS";
  EXPECT_EQ(static_cast<int>(acked.size()), total_jobs);

  // The database, read directly.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(tmp.file("data/jobctl.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "ok");
  sqlite3_finalize(s);
  std::map<std::string, std::vector<int64_t>> stored;  // key -> ids
  int64_t rows = 0;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT id, idempotency_key, name FROM jobs", -1, &s, nullptr), SQLITE_OK);
  while (sqlite3_step(s) == SQLITE_ROW) {
    ++rows;
    const auto* k = sqlite3_column_text(s, 1);
    const std::string key = k ? reinterpret_cast<const char*>(k) : "";
    const std::string name = reinterpret_cast<const char*>(sqlite3_column_text(s, 2));
    EXPECT_EQ(key, name) << "job " << sqlite3_column_int64(s, 0);
    stored[key].push_back(sqlite3_column_int64(s, 0));
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  int missing = 0, duplicated = 0, wrong_id = 0;
  for (const auto& [key, id] : acked) {
    auto it = stored.find(key);
    if (it == stored.end()) { ++missing; continue; }
    if (it->second.size() != 1) ++duplicated;
    else if (it->second[0] != id) ++wrong_id;
  }
  EXPECT_EQ(missing, 0) << "acknowledged jobs lost";
  EXPECT_EQ(duplicated, 0) << "acknowledged jobs stored more than once";
  EXPECT_EQ(wrong_id, 0) << "stored under another id than the 201 said";
  EXPECT_EQ(rows, static_cast<int64_t>(stored.size())) << "a key stored twice";
  EXPECT_LE(stored.size(), acked.size()) << "jobs stored that no client submitted";
}

}  // namespace
