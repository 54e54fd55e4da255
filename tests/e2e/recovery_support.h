// Helpers of the end-to-end tests (first the recovery tests, recovery_test.cpp) and the recovery
// benchmark: jobctld, jobctl-worker and jobctl-train as real processes, their output collected on
// a thread; a job's result line and log; a submit through the CLI.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/crc32c.h"
#include "client/api_client.h"
#include "tests/support/process.h"
#include "tests/support/server_process.h"
#include "tests/support/poll.h"

namespace jobctl::e2e {

using jobctl::testing::env_or_fail;
using jobctl::testing::Process;
using nlohmann::json;
using namespace std::chrono_literals;

// A jobctld on `listen` over `data_dir`, with a short lease timeout so lost workers are noticed
// within seconds. url() is empty when it did not start.
class Daemon : public jobctl::testing::ServerProcess {
 public:
  // `extra`: more flags, e.g. {"--config", path}.
  Daemon(const std::string& data_dir, const std::string& listen = "127.0.0.1:0", int lease_timeout_s = 3,
         const std::vector<std::string>& extra = {})
      : ServerProcess(argv(data_dir, listen, lease_timeout_s, extra)) {}

 private:
  static std::vector<std::string> argv(const std::string& data_dir, const std::string& listen, int lease_timeout_s,
                                       const std::vector<std::string>& extra) {
    std::vector<std::string> a = {env_or_fail("JOBCTLD"), "--listen", listen, "--data-dir", data_dir,
                                  "--heartbeat-interval-s", "1", "--lease-timeout-s", std::to_string(lease_timeout_s)};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

// A CPU worker with one BLAS thread (bit-exact across workers) that keeps its job folders.
inline std::vector<std::string> worker_argv(const std::string& url, const std::string& name,
                                            const std::string& work_dir,
                                            const std::vector<std::string>& extra = {}) {
  std::vector<std::string> a = {env_or_fail("JOBCTL_WORKER"), "--server", url, "--name", name, "--trainer",
                                env_or_fail("JOBCTL_TRAIN"), "--work-dir", work_dir, "--device", "cpu",
                                "--threads", "1", "--wait-s", "2", "--keep-work-dirs"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// A synthetic MLP job of about 1,500 steps (seconds on one core) with a checkpoint every 100
// steps (3.7 MB each: larger than the daemon's 1 MiB JSON body limit).
inline std::string recovery_spec(const std::string& name) {
  return json{{"name", name},
              {"model", {{"kind", "mlp"}, {"hidden", {512, 512}}}},
              {"data", {{"dataset", "synthetic"}, {"samples", 16384}, {"features", 64}, {"classes", 10}, {"seed", 1}}},
              {"train", {{"epochs", 3}, {"batch_size", 32}, {"seed", 7}}},
              {"checkpoint", {{"every_steps", 100}, {"keep", 3}}}}
      .dump();
}

// Polls the job until `pred` holds or the timeout passes; returns the last answer.
inline json wait_job(client::ApiClient& api, int64_t id, const std::function<bool(const json&)>& pred,
                     std::chrono::seconds timeout) {
  json last;
  jobctl::testing::poll_until([&] {
    auto r = api.get_job(id);
    if (r) last = *r;
    return r && pred(last);
  }, timeout);
  return last;
}

inline bool is_terminal(const json& job) {
  const std::string s = job.value("state", "");
  return s == "succeeded" || s == "failed" || s == "cancelled";
}

// Given back after an interruption and waiting for a worker: `queued`, or already `placed` again
// (placement runs as soon as a job is requeued, so either may be seen).
inline bool is_back_in_queue(const json& job) {
  const std::string s = job.value("state", "");
  return (s == "queued" || s == "placed") && job.value("recoveries", 0) >= 1;
}

inline int64_t progress_step(const json& job) {
  if (!job.contains("progress") || !job["progress"].is_object()) return -1;
  return job["progress"].value("step", int64_t{-1});
}

inline std::vector<std::string> event_types(const json& job) {
  std::vector<std::string> out;
  for (const auto& e : job.value("events", json::array())) out.push_back(e.value("type", ""));
  return out;
}

// The last `result` line of a job protocol program's output (null: none).
inline json result_line(const std::string& out) {
  json last;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == "result") last = j;
  }
  return last;
}

// The job's log as text (GET /v1/jobs/{id}/log); empty when it cannot be read.
inline std::string job_log_text(client::ApiClient& api, int64_t id) {
  auto r = api.http().request("GET", "/v1/jobs/" + std::to_string(id) + "/log");
  if (!r || r->status != 200) return "";
  return json::parse(r->body, nullptr, false).value("text", "");
}

// `jobctl -o json submit ARGS...` against jobctld at `url`, as a user runs it: the new job's id;
// 0, with a test failure giving what the CLI printed, when it refused.
inline int64_t submit_with_cli(const std::string& url, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {env_or_fail("JOBCTL_CLI"), "--server", url, "-o", "json", "submit"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto submitted = jobctl::testing::run_to_end(argv, 60s);
  const json answer = json::parse(submitted.out, nullptr, false);
  if (!submitted.success() || !answer.is_object() || !answer.contains("id")) {
    ADD_FAILURE() << "jobctl submit: " << submitted.describe() << "\n" << submitted.out << submitted.err;
    return 0;
  }
  return answer["id"].get<int64_t>();
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The uninterrupted run of `spec_json` (a variant of recovery_spec), as a CPU worker runs it
// (jobctl-train itself, one thread), in `dir`: the bytes of its final.ckpt; empty, with a test
// failure, when it fails.
inline std::string reference_final_checkpoint(const std::string& dir,
                                              const std::string& spec_json = recovery_spec("reference")) {
  const std::string spec_path = dir + "/spec.json";
  std::ofstream(spec_path) << spec_json << "\n";
  const auto st = jobctl::testing::run_to_end({env_or_fail("JOBCTL_TRAIN"), "--spec", spec_path, "--out", dir + "/out",
                                               "--device", "cpu", "--threads", "1", "--log-every", "100"});
  if (!st.success()) {
    ADD_FAILURE() << "the reference run failed: " << st.describe() << "\n" << st.err;
    return "";
  }
  std::string bytes = read_bytes(dir + "/out/final.ckpt");
  EXPECT_GT(bytes.size(), 1u << 20);
  return bytes;
}

// The CRC32C a job's result reports for its final checkpoint ("final_checkpoint_crc32c").
inline std::string crc32c_hex(const std::string& bytes) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", crc32c::value(bytes.data(), bytes.size()));
  return buf;
}

// The final.ckpt of the job among a worker's kept folders (--keep-work-dirs); empty when none.
inline std::string kept_final_checkpoint(const std::string& work_dir, int64_t job_id) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(work_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.rfind("job-" + std::to_string(job_id) + "-lease-", 0) == 0 && fs::exists(it->path() / "out/final.ckpt"))
      return read_bytes((it->path() / "out/final.ckpt").string());
  }
  return "";
}

}  // namespace jobctl::e2e
