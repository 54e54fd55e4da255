// jobctl-bench-wide-job: wide jobs' promised against actual starts behind a long mixed stream.
//
// Starts jobctld (owned GPUs of the box's model, amortised, placement.reevaluate_s 1) and one
// jobctl-worker with fake GPUs (tests/fixtures/nvidia-smi), then for --minutes submits command
// jobs (`sleep`) whose widths cycle through --widths, one every --interval-ms, each running
// --run-s and saying --estimate-s (honest: longer than it runs, so no job overruns), and every
// --wide-every-s a job as wide as the box. At the end, for each wide job: the start its first
// reservation promised, when it was leased, and how often its reservation moved later. Prints
// figures; never asserts.
//
//   jobctl-bench-wide-job --worker BIN --fixtures DIR [--box 4|8] [--widths 1,2] [--minutes 10]
//                         [--interval-ms 400] [--wide-every-s 60] [--run-ms 1500] [--estimate-ms 3000]
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/security/bench_daemon.h"
#include "client/http_client.h"

namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json job(const std::string& name, const std::string& gpu, int gpus, int run_ms, int estimate_ms) {
  return {{"name", name},
          {"command", {"/bin/sleep", std::to_string(run_ms / 1000.0)}},
          {"estimate", {{"hours", estimate_ms / 3.6e6}, {"gpu", gpu}}},
          {"resources", {{"gpu", gpu}, {"gpus", gpus}}},
          {"placement", {{"mode", "local"}}}};
}

json get_json(jobctl::client::HttpClient& http, const std::string& path) {
  auto r = http.request("GET", path);
  if (!r || r->status != 200) return nullptr;
  return json::parse(r->body, nullptr, false);
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) {
  std::string worker, fixtures, widths_text = "1,2";
  int box = 4, minutes = 10, interval_ms = 400, wide_every_s = 60, run_ms = 1500, estimate_ms = 3000;
  const char* usage =
      "jobctl-bench-wide-job --worker BIN --fixtures DIR [--box 4|8] [--widths 1,2] [--minutes 10] "
      "[--interval-ms 400] [--wide-every-s 60] [--run-ms 1500] [--estimate-ms 3000]";
  if (!jobctl::bench::parse_flags(argc, argv, usage,
                                  {{"--worker", &worker}, {"--fixtures", &fixtures}, {"--box", &box},
                                   {"--widths", &widths_text}, {"--minutes", &minutes}, {"--interval-ms", &interval_ms},
                                   {"--wide-every-s", &wide_every_s}, {"--run-ms", &run_ms},
                                   {"--estimate-ms", &estimate_ms}}))
    return 2;
  if (worker.empty() || fixtures.empty() || (box != 4 && box != 8)) {
    std::fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  std::vector<int> widths;
  std::stringstream ws(widths_text);
  for (std::string w; std::getline(ws, w, ',');) widths.push_back(std::stoi(w));
  const std::string gpu = box == 4 ? "V100" : "H100";
  const std::string fixture = fixtures + (box == 4 ? "/v100-sxm2-16gb-x4" : "/h100-sxm-x8");

  jobctl::bench::ScratchDir scratch("jobctl-bench-wide-job");
  if (scratch.path().empty()) return 1;
  const json pool = {{"gpu_model", gpu},   {"count", box},          {"purchase_usd", 20000.0 * box}, {"lifetime_years", 4},
                     {"utilisation", 0.5}, {"power_kw", 0.4 * box}, {"electricity_usd_per_kwh", 0.15}};
  const std::string config = scratch.path() + "/jobctld.json";
  std::ofstream(config) << json{{"workers", {{"max_lease_wait_s", 1}}},
                                {"cost", {{"pricing", "amortised"}, {"local_gpus", {pool}}}},
                                {"placement", {{"reevaluate_s", 1}}}}
                               .dump();
  auto daemon = jobctl::bench::start_jobctld({JOBCTLD_PATH, "--listen", "127.0.0.1:0", "--data-dir",
                                              scratch.path() + "/data", "--config", config});
  if (!daemon.child) return 1;
  // jobctld's log goes on for the whole run: read it away so that a full pipe never blocks it.
  std::thread drain([fd = daemon.child->stdout_fd()] {
    char buf[65536];
    while (::read(fd, buf, sizeof buf) > 0) {
    }
  });
  const std::string url = "http://127.0.0.1:" + std::to_string(daemon.port);
  auto agent = jobctl::process::Child::spawn(
      {worker, "--server", url, "--name", "box", "--trainer", "/bin/true", "--work-dir", scratch.path() + "/work",
       "--wait-s", "1", "--allow-commands", "--fake-gpus", fixture},
      {.stdout_to = jobctl::process::Output::discard(), .stderr_to = jobctl::process::Output::discard()});
  if (!agent) {
    std::fprintf(stderr, "cannot start %s: %s\n", worker.c_str(), agent.error().message.c_str());
    return 1;
  }
  jobctl::client::HttpClient http(url);
  for (int k = 0; k < 300; ++k) {
    const json w = get_json(http, "/v1/workers");
    if (w.is_object() && !w["workers"].empty()) break;
    std::this_thread::sleep_for(100ms);
  }

  auto submit = [&](const json& spec) -> int64_t {
    auto r = http.request("POST", "/v1/jobs", spec.dump());
    if (!r || r->status != 201) return 0;
    return json::parse(r->body).value("id", int64_t{0});
  };
  const auto t0 = std::chrono::steady_clock::now();
  const auto end = t0 + std::chrono::minutes(minutes);
  std::vector<int64_t> wide;
  int submitted = 0, refused = 0;
  auto next_wide = t0 + std::chrono::seconds(wide_every_s / 2);
  for (int k = 0; std::chrono::steady_clock::now() < end; ++k) {
    const int64_t id = submit(job("stream-" + std::to_string(k), gpu, widths[k % widths.size()], run_ms, estimate_ms));
    id ? ++submitted : ++refused;
    if (std::chrono::steady_clock::now() >= next_wide) {
      if (const int64_t w = submit(job("wide-" + std::to_string(wide.size()), gpu, box, run_ms, estimate_ms))) wide.push_back(w);
      next_wide += std::chrono::seconds(wide_every_s);
    }
    std::this_thread::sleep_until(t0 + std::chrono::milliseconds(int64_t{interval_ms} * (k + 1)));
  }
  // The stream arrives faster than the box finishes it: the wide jobs submitted last wait behind
  // the backlog, which drains once the stream stops. Up to three times the stream's length.
  const auto stream_end = std::chrono::steady_clock::now();
  // Jobs finished by the stream's end (/metrics' jobctl_jobs), against what the box could do.
  int64_t finished = -1;
  if (auto m = http.request("GET", "/metrics"); m && m->status == 200)
    if (const size_t at = m->body.find("jobctl_jobs{state=\"succeeded\"} "); at != std::string::npos)
      finished = std::atoll(m->body.c_str() + at + 31);
  std::vector<json> done(wide.size());
  const auto give_up = stream_end + std::chrono::minutes(3 * minutes);
  for (size_t i = 0; i < wide.size(); ++i)
    while (std::chrono::steady_clock::now() < give_up) {
      done[i] = get_json(http, "/v1/jobs/" + std::to_string(wide[i]));
      bool leased = false;
      if (done[i].is_object())
        for (const auto& e : done[i].value("events", json::array())) leased = leased || e.value("type", "") == "leased";
      if (leased) break;
      std::this_thread::sleep_for(500ms);
    }

  std::printf("box %d x %s, widths %s, %d min: %d stream jobs submitted (%d refused), one every %d ms, "
              "each %d ms saying %d ms; %zu wide jobs, one every %d s\n",
              box, gpu.c_str(), widths_text.c_str(), minutes, submitted, refused, interval_ms, run_ms, estimate_ms,
              wide.size(), wide_every_s);
  double mean_width = 0;
  for (int w : widths) mean_width += w;
  mean_width /= static_cast<double>(widths.size());
  std::printf("finished by the stream's end: %lld jobs (the box runs at most %.0f of the stream's in that time)\n",
              static_cast<long long>(finished), minutes * 60.0 * box / mean_width / (run_ms / 1000.0));
  std::printf("%-8s %12s %12s %14s %10s %12s\n", "job", "reserved_s", "promised_s", "leased_s", "late_s", "moved_later");
  std::vector<double> late;
  int never = 0, moves = 0;
  for (size_t i = 0; i < wide.size(); ++i) {
    int64_t placed = 0, reserved = 0, promised = 0, leased = 0, last_start = 0;
    int moved = 0;
    for (const auto& e : done[i].is_object() ? done[i].value("events", json::array()) : json::array()) {
      const std::string type = e.value("type", "");
      const int64_t t = e.value("time_ms", int64_t{0});
      if (type == "placed" && placed == 0) placed = t;
      if (type == "reserved") {
        const int64_t start = e["detail"].value("start_ms", int64_t{0});
        if (reserved == 0) reserved = t, promised = start;
        else if (start > last_start) ++moved;
        last_start = start;
      }
      if (type == "leased" && leased == 0) leased = t;
    }
    moves += moved;
    auto rel = [&](int64_t t) { return t ? (t - placed) / 1000.0 : -1.0; };
    if (leased && promised) late.push_back((leased - promised) / 1000.0);
    else ++never;
    std::printf("%-8lld %12.1f %12.1f %14.1f %10.1f %12d\n", static_cast<long long>(wide[i]), rel(reserved),
                rel(promised), rel(leased), leased && promised ? (leased - promised) / 1000.0 : -1.0, moved);
  }
  std::printf("leased minus promised (s): p50 %.1f, max %.1f over %zu wide jobs; %d not leased or never reserved; "
              "%d reservation moves later in all\n",
              pct(late, 0.5), late.empty() ? 0.0 : *std::max_element(late.begin(), late.end()), late.size(), never, moves);
  agent.value()->terminate(SIGTERM, 30s);
  daemon.child->terminate(SIGTERM, 30s);
  drain.join();
  return 0;
}
