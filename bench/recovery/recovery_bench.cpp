// Recovery timings, real processes on loopback, a synthetic MLP job (3.7 MB
// checkpoints, one BLAS thread):
//   A. SIGTERM of the worker running the job -> its emergency checkpoint stored in jobctld
//      (seen through GET /v1/jobs/{id}/checkpoints), and -> the first resumed step on a second,
//      idle worker (seen in that worker's log);
//   B. kill -9 of the worker -> the first resumed step elsewhere (dominated by the lease
//      timeout, 3 s here);
// Reference measured in the same run: jobctl-train resuming from a local checkpoint file to its
// first step (the cost of a restart with no orchestration at all).
//
// Usage: jobctl-bench-recovery [ROUNDS]   (default 3)
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/api_client.h"
#include "process/output_collector.h"
#include "process/run.h"

namespace {

using jobctl::process::OutputCollector;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A process whose output lines are kept with the time each was seen (process/output_collector.h).
std::unique_ptr<OutputCollector> start(const std::vector<std::string>& argv) {
  auto c = OutputCollector::start(argv);
  if (!c) {
    std::cerr << c.error().message << "\n";
    std::exit(1);
  }
  return std::move(*c);
}

// The time the first line matching `re` was seen, waiting up to `timeout`.
std::optional<Clock::time_point> wait_line(const OutputCollector& p, const std::regex& re, std::chrono::seconds timeout,
                                           std::string* line = nullptr) {
  auto l = p.wait_for_line([&](std::string_view t) { return std::regex_search(t.begin(), t.end(), re); }, timeout);
  if (!l) return std::nullopt;
  if (line) *line = l->text;
  return l->at;
}

std::string spec_json() {
  return json{{"name", "bench-recovery"},
              {"model", {{"kind", "mlp"}, {"hidden", {512, 512}}}},
              {"data", {{"dataset", "synthetic"}, {"samples", 16384}, {"features", 64}, {"classes", 10}, {"seed", 1}}},
              {"train", {{"epochs", 3}, {"batch_size", 32}, {"seed", 7}}},
              {"checkpoint", {{"every_steps", 100}, {"keep", 3}}}}
      .dump();
}

std::vector<std::string> worker(const std::string& url, const std::string& name, const std::string& dir) {
  return {JOBCTL_WORKER_PATH, "--server", url, "--name", name, "--trainer", JOBCTL_TRAIN_PATH, "--work-dir", dir,
          "--device", "cpu", "--threads", "1", "--wait-s", "2"};
}

int64_t step_of(const json& job) {
  return job.contains("progress") && job["progress"].is_object() ? job["progress"].value("step", int64_t{-1}) : -1;
}

struct Round {
  double stored_ms = -1, resumed_ms = -1, upload_ms = -1;
};

// One interruption. sigterm: graceful (emergency checkpoint); else kill -9 (lease expiry).
Round interrupt_once(const std::string& root, bool sigterm) {
  Round out;
  std::filesystem::create_directories(root);
  auto d = start({JOBCTLD_PATH, "--listen", "127.0.0.1:0", "--data-dir", root + "/data", "--heartbeat-interval-s", "1",
                  "--lease-timeout-s", "3"});
  std::string line;
  if (!wait_line(*d, std::regex("\"event\":\"listening\""), 60s, &line)) {
    std::cerr << "jobctld did not start\n" << d->output();
    std::exit(1);
  }
  const std::string url = json::parse(line)["url"];
  jobctl::client::ApiClient api(url);
  auto a = start(worker(url, "a", root + "/a"));
  if (!wait_line(*a, std::regex("registered with"), 30s)) std::exit(1);
  auto sub = api.submit_job(spec_json());
  if (!sub) std::exit(1);
  const int64_t id = (*sub)["id"];
  const std::string list_path = "/v1/jobs/" + std::to_string(id) + "/checkpoints";
  // Mid-job, just after a periodic checkpoint.
  while (true) {
    auto j = api.get_job(id);
    if (j && step_of(*j) >= 230) break;
    std::this_thread::sleep_for(5ms);
  }
  auto b = start(worker(url, "b", root + "/b"));  // idle spare capacity, long-polling
  if (!wait_line(*b, std::regex("registered with"), 30s)) std::exit(1);
  const auto t0 = Clock::now();
  if (sigterm) {
    a->signal(SIGTERM);
    // When each step first shows in the daemon's list; the emergency one is named by A's log.
    std::map<int64_t, double> first_seen;
    while (ms_since(t0) < 30000) {
      auto l = api.http().request("GET", list_path);
      if (l && l->status == 200)
        for (const auto& c : json::parse(l->body)["checkpoints"])
          first_seen.emplace(c["step"].get<int64_t>(), ms_since(t0));
      auto j = api.get_job(id);
      if (j && (*j)["state"] != "running" && (*j)["state"] != "placed") break;  // given back
      std::this_thread::sleep_for(1ms);
    }
    a->wait();
    std::smatch m;
    const std::string log = a->output();
    if (std::regex_search(log, m, std::regex("uploaded (signal|interrupt) checkpoint at step ([0-9]+) in ([0-9]+) ms"))) {
      out.upload_ms = std::stod(m[3]);
      auto it = first_seen.find(std::stoll(m[2]));
      if (it != first_seen.end()) out.stored_ms = it->second;
    }
  } else {
    a->signal(SIGKILL);
  }
  if (auto t = wait_line(*b, std::regex("first resumed step"), 60s)) {
    out.resumed_ms = std::chrono::duration<double, std::milli>(*t - t0).count();
  } else {
    std::cerr << "worker b did not resume\n" << b->output() << "\n--- a:\n" << a->output() << "\n--- d:\n" << d->output();
  }
  return out;
}

// Reference: jobctl-train resuming from a local file, to its first step line.
double local_resume_ms(const std::string& root) {
  std::filesystem::create_directories(root);
  const std::string spec = root + "/spec.json";
  std::ofstream(spec) << spec_json() << "\n";
  auto first_run = jobctl::process::run({JOBCTL_TRAIN_PATH, "--spec", spec, "--out", root + "/out", "--device", "cpu",
                                         "--threads", "1", "--max-steps", "200", "--log-every", "100"});
  if (!first_run || !first_run->success()) std::exit(1);
  std::string ckpt;
  for (const auto& e : std::filesystem::directory_iterator(root + "/out"))
    if (e.path().filename().string().rfind("ckpt-", 0) == 0) ckpt = std::max(ckpt, e.path().string());
  const auto t0 = Clock::now();
  auto t = start({JOBCTL_TRAIN_PATH, "--spec", spec, "--out", root + "/out2", "--device", "cpu", "--threads", "1",
                  "--resume", ckpt, "--log-every", "10", "--max-steps", "260"});
  auto first = wait_line(*t, std::regex("\"event\":\"step\""), 60s);
  t->wait();
  return first ? std::chrono::duration<double, std::milli>(*first - t0).count() : -1;
}

void print(const char* what, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::printf("%-52s", what);
  for (double x : v) std::printf(" %8.1f", x);
  std::printf("   median %8.1f ms\n", v.empty() ? -1.0 : v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const std::string root = (std::filesystem::temp_directory_path() / ("jobctl-bench-recovery-" + std::to_string(::getpid()))).string();
  std::vector<double> stored, upload, resumed_term, resumed_kill, reference;
  for (int i = 0; i < rounds; ++i) {
    reference.push_back(local_resume_ms(root + "/ref" + std::to_string(i)));
    Round r = interrupt_once(root + "/term" + std::to_string(i), true);
    stored.push_back(r.stored_ms);
    upload.push_back(r.upload_ms);
    resumed_term.push_back(r.resumed_ms);
    Round k = interrupt_once(root + "/kill" + std::to_string(i), false);
    resumed_kill.push_back(k.resumed_ms);
  }
  std::filesystem::remove_all(root);
  std::printf("recovery bench: %d rounds, checkpoint 3.7 MB, lease timeout 3 s, heartbeat 1 s\n", rounds);
  print("SIGTERM -> emergency checkpoint stored in jobctld", stored);
  print("  of which the upload (worker log)", upload);
  print("SIGTERM -> first resumed step on another worker", resumed_term);
  print("kill -9 -> first resumed step on another worker", resumed_kill);
  print("reference: jobctl-train --resume local file -> step", reference);
  std::vector<double> ratio;
  for (size_t i = 0; i < resumed_term.size(); ++i) ratio.push_back(resumed_term[i] / reference[i]);
  std::sort(ratio.begin(), ratio.end());
  std::printf("SIGTERM recovery / local resume (median ratio)          %.2fx\n", ratio[ratio.size() / 2]);
  return 0;
}
