// What the security tests share (tests/security, label `security`): jobctld as a real process
// on a port the OS picks, tokens made with `jobctld --create-token`, HTTP through libcurl or a
// raw socket (for requests no well-behaved client sends), and the daemon's memory and CPU read
// from /proc. Every attack is made over real HTTP against a real jobctld.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.h"
#include "tests/support/process.h"
#include "tests/support/raw_connection.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/poll.h"

namespace jobctl::security {

using jobctl::testing::env_or_fail;
using jobctl::testing::Process;
using jobctl::testing::RawConnection;
using jobctl::testing::status_of;
using jobctl::testing::TempDir;
using nlohmann::json;
using namespace std::chrono_literals;

// Runs a command to its end (at most a minute), with `env` set in its environment: its exit
// status and stdout + stderr. A command that cannot be started is a test failure.
using CommandResult = process::RunResult;
inline CommandResult run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
  auto r = process::run(argv, {.env = env, .timeout = std::chrono::minutes(1)});
  if (!r) {
    ADD_FAILURE() << "cannot run " << argv.front() << ": " << r.error().message;
    return CommandResult{.status = process::ExitStatus{true, 127, 0}};
  }
  return std::move(*r);
}

// A token for `user` with `role`, made in the data directory's database (the daemon may run).
inline std::string create_token(const std::string& data_dir, const std::string& user, const std::string& role) {
  CommandResult r = run_command({env_or_fail("JOBCTLD"), "--create-token", user, "--role", role, "--data-dir", data_dir});
  EXPECT_TRUE(r.status.success()) << r.err;
  std::string token = r.out.substr(0, r.out.find('\n'));
  return token;
}

// jobctld on 127.0.0.1 and a port the OS picks, over `data_dir`. `extra`: more flags;
// `wrapper`: a command to run it under (e.g. {"prlimit", "--nofile=64", "--"}).
class Jobctld : public jobctl::testing::ServerProcess {
 public:
  Jobctld(const std::string& data_dir, const std::vector<std::string>& extra = {},
          const std::vector<std::string>& wrapper = {})
      : ServerProcess(argv(data_dir, extra, wrapper)) {}

 private:
  static std::vector<std::string> argv(const std::string& data_dir, const std::vector<std::string>& extra,
                                       const std::vector<std::string>& wrapper) {
    std::vector<std::string> a = wrapper;
    for (const std::string& s : {env_or_fail("JOBCTLD"), std::string("--listen"), std::string("127.0.0.1:0"),
                                 std::string("--data-dir"), data_dir})
      a.push_back(s);
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

// Writes a jobctld configuration file and returns {"--config", path}.
inline std::vector<std::string> config_flag(const TempDir& dir, const json& config) {
  const std::string path = dir.file("jobctld-config.json");
  std::ofstream(path) << config.dump();
  return {"--config", path};
}

// An HTTP client for one caller: an API token and, for a worker, its secret.
inline client::HttpClient http_as(const std::string& url, const std::string& token = "",
                                  const std::string& worker_secret = "") {
  client::HttpClientOptions o;
  o.bearer_token = token;
  o.worker_secret = worker_secret;
  return client::HttpClient(url, o);
}

inline json body_of(const client::HttpResult& r) {
  json j = json::parse(r.body, nullptr, false);
  return j.is_discarded() ? json() : j;
}

// The `field` of an error answer ("" when the answer is not one).
inline std::string error_field(const client::HttpResult& r) {
  const json j = body_of(r);
  return j.is_object() && j.contains("error") && j["error"].is_object() ? j["error"].value("field", "") : "";
}

// A registered worker: its id and secret.
struct Worker {
  int64_t id = 0;
  std::string secret;
};
inline Worker register_worker(const std::string& url, const std::string& token, const std::string& name) {
  auto http = http_as(url, token);
  auto r = http.request("POST", "/v1/workers/register",
                        json{{"name", name}, {"capabilities", {{"gpus", json::array()}, {"cpu_cores", 2}, {"memory_mb", 4096}}}}.dump());
  EXPECT_TRUE(r && r->status == 201) << (r ? r->body : r.error().message);
  if (!r || r->status != 201) return {};
  const json j = body_of(*r);
  return Worker{j.value("worker_id", int64_t{0}), j.value("worker_secret", std::string())};
}

// Leases a job for the worker, waiting up to `wait_s`; the lease's JSON (null: none).
inline json lease(const std::string& url, const std::string& token, const Worker& w, int wait_s = 10) {
  auto http = http_as(url, token, w.secret);
  auto r = http.request("POST", "/v1/workers/" + std::to_string(w.id) + "/lease?wait_s=" + std::to_string(wait_s),
                        "{}", (wait_s + 10) * 1000L);
  EXPECT_TRUE(r && (r->status == 200 || r->status == 204)) << (r ? r->body : r.error().message);
  if (!r || r->status != 200) return nullptr;
  return body_of(*r);
}

// A small synthetic job: 32 steps an epoch; `epochs` of them.
inline std::string small_spec(const std::string& name, int epochs = 2) {
  return json{{"name", name},
              {"model", {{"kind", "mlp"}, {"hidden", {32}}}},
              {"data", {{"dataset", "synthetic"}, {"samples", 256}, {"features", 16}, {"classes", 4}, {"seed", 3}}},
              {"train", {{"epochs", epochs}, {"batch_size", 8}, {"seed", 5}}},
              {"checkpoint", {{"every_steps", 8}, {"keep", 3}}}}
      .dump();
}

inline int64_t submit(const std::string& url, const std::string& token, const std::string& spec) {
  auto http = http_as(url, token);
  auto r = http.request("POST", "/v1/jobs", spec);
  EXPECT_TRUE(r && r->status == 201) << (r ? r->body : r.error().message);
  return r && r->status == 201 ? body_of(*r).value("id", int64_t{0}) : 0;
}

// ---- /proc

// A line's number from /proc/<pid>/status, in kB ("VmHWM": the peak resident memory).
inline int64_t proc_status_kb(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1));
  return -1;
}

// CPU time the process has used, in seconds (user + system).
inline double cpu_seconds(pid_t pid) {
  std::string text;
  std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/stat"), text);
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i)
    if (i == 14 || i == 15) ticks += std::stod(field);
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// Polls GET /v1/jobs/{id} until `pred` holds (or the timeout); the last answer.
template <class Pred>
json wait_job(const std::string& url, const std::string& token, int64_t id, Pred pred, std::chrono::seconds timeout) {
  auto http = http_as(url, token);
  json last;
  jobctl::testing::poll_until([&] {
    auto r = http.request("GET", "/v1/jobs/" + std::to_string(id));
    const bool answered = r && r->status == 200;
    if (answered) last = body_of(*r);
    return answered && pred(last);
  }, timeout);
  return last;
}

}  // namespace jobctl::security
