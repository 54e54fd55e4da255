// jobctl-bench-daemon: load for a running jobctld (bench/daemon/run.sh drives it). Prints one
// line of figures per mode; never asserts.
//
//   submit    --url U --clients N --seconds S [--rate R] [--metrics 1]
//             durable submits: throughput, p50/p99 (closed loop at full speed, or open loop at R
//             submits/s spread over the clients); --metrics 1: also what the store's writer did
//             meanwhile, from jobctld's /metrics before and after (commit and queue-wait p99/max,
//             changes per commit, WAL checkpoints, placement decisions): what drives the tail
//   list      --url U --requests N                         GET /v1/jobs?state=queued&limit=100 p50/p99
//   heartbeat --url U --workers W --interval-s I --seconds S --threads T --pid PID
//             W simulated workers, each holding a running job, heartbeating every I s; jobctld's
//             CPU % over the run (from /proc/PID/stat)
//   lease     --url U --jobs N [--delay-s D]                 lease latency: N times a new worker
//             (cpu_cores 1) long-polls for a lease, D s later (default 0.3) a job is submitted;
//             p50/min/max/p99 from sending the submit to the lease's answer
//   fill      --db PATH --jobs N --queued-every K            bulk-insert N jobs (every K-th queued,
//             the rest succeeded) straight into a stopped jobctld's database, one row + events each
//   idle      --pid PID --seconds S [--skip-s W]              a running jobctld's CPU % over S seconds
//             (from /proc/PID/stat) after W seconds (default 0) for start-up to settle, with the
//             busiest second (a placement pass shows there)
//   start     --jobctld BIN --data-dir D --port P --seconds S --rate R
//             starts jobctld on D (e.g. a filled database) and prints how long until GET /healthz
//             answers 200, then for S seconds submits at R/s (open loop) while probing /healthz
//             every 20 ms: both p50/p99/max, and jobctld's CPU % per 5 s (start-up's placement
//             work shows there); stops jobctld with SIGTERM
//   quiet     --jobctld BIN --data-dir D --port P [--skip-s W] [--windows N] [--window-s L]
//             starts jobctld on D (e.g. a filled database), waits W s (default 30) after /healthz
//             answers for start-up to settle, prints its CPU % over N windows of L s (default 4 of
//             15) with nothing changing, then sends SIGTERM and prints how long it took to exit
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
using jobctl::client::HttpClient;

std::map<std::string, std::string> args(int argc, char** argv) {
  std::map<std::string, std::string> out;
  for (int i = 2; i + 1 < argc; i += 2) out[argv[i]] = argv[i + 1];
  return out;
}
std::string get(const std::map<std::string, std::string>& a, const std::string& k, const std::string& d) {
  auto it = a.find(k);
  return it == a.end() ? d : it->second;
}

double pct(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

const std::string kSpec =
    R"({"model":{"kind":"mlp","hidden":[32]},"data":{"dataset":"synthetic","samples":256}})";

// ---- /metrics before and after a run: the store writer's histograms over the run.

// Every sample line of a Prometheus text exposition: "name{labels}" -> value.
std::map<std::string, double> scrape(HttpClient& http) {
  std::map<std::string, double> out;
  auto r = http.request("GET", "/metrics");
  if (!r || r->status != 200) return out;
  std::istringstream in(r->body);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    out[line.substr(0, sp)] = std::strtod(line.c_str() + sp + 1, nullptr);
  }
  return out;
}

// One histogram's buckets over the run (after minus before): (upper bound, cumulative count).
std::vector<std::pair<double, double>> run_buckets(const std::map<std::string, double>& before,
                                                   const std::map<std::string, double>& after,
                                                   const std::string& name, const std::string& labels) {
  std::vector<std::pair<double, double>> out;
  const std::string prefix = name + "_bucket{" + labels + (labels.empty() ? "" : ",") + "le=\"";
  for (auto it = after.lower_bound(prefix); it != after.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    const std::string le = it->first.substr(prefix.size(), it->first.size() - prefix.size() - 2);
    const double bound = le == "+Inf" ? INFINITY : std::strtod(le.c_str(), nullptr);
    auto b = before.find(it->first);
    out.emplace_back(bound, it->second - (b == before.end() ? 0 : b->second));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The bucket bound under which a fraction q of the run's observations fell ("<= bound").
double bucket_quantile(const std::vector<std::pair<double, double>>& buckets, double q) {
  if (buckets.empty() || buckets.back().second <= 0) return 0;
  const double total = buckets.back().second;
  for (const auto& [bound, n] : buckets)
    if (n >= q * total) return bound;
  return INFINITY;
}

void print_writer_breakdown(const std::map<std::string, double>& before, const std::map<std::string, double>& after,
                            double run_s) {
  auto total = [&](const std::string& key) {
    auto a = after.find(key);
    auto b = before.find(key);
    return (a == after.end() ? 0 : a->second) - (b == before.end() ? 0 : b->second);
  };
  auto ms = [](double seconds) {
    if (std::isinf(seconds)) return std::string("inf");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", seconds * 1000);
    return std::string(buf);
  };
  const auto commit = run_buckets(before, after, "jobctl_store_commit_seconds", "durable=\"true\"");
  const auto wait = run_buckets(before, after, "jobctl_store_commit_queue_wait_seconds", "");
  const auto ckpt = run_buckets(before, after, "jobctl_store_wal_checkpoint_seconds", "");
  const auto placement = run_buckets(before, after, "jobctl_placement_latency_seconds", "");
  // Inside jobctld, from the route's dispatch to its answer: what is left of a submit's time
  // beyond this was spent before dispatch (reading the request, an I/O thread not running) or
  // in the client.
  const auto server = run_buckets(before, after, "jobctl_http_request_duration_seconds",
                                  "method=\"POST\",route=\"/v1/jobs\"");
  const double commits = total("jobctl_store_commit_seconds_count{durable=\"true\"}");
  const double relaxed = total("jobctl_store_commit_seconds_count{durable=\"false\"}");
  const double checkpoints = total("jobctl_store_wal_checkpoint_seconds_count");
  std::printf("  store writer (bucket bounds, ms): %.0f durable commits (+%.0f relaxed), %.1f changes each; "
              "COMMIT+fsync p99 <= %s, max <= %s, sum %.0f ms; queue wait p99 <= %s, max <= %s; "
              "WAL checkpoints %.0f (%.0f frames), p99 <= %s, max <= %s, sum %.0f ms; "
              "placement decisions %.0f, max <= %s\n"
              "  jobctld (bucket bounds, ms): POST /v1/jobs dispatch to answer p99 <= %s, max <= %s; CPU %.0f%% of a core\n",
              commits, relaxed, commits > 0 ? total("jobctl_store_commit_changes_sum") / (commits + relaxed) : 0.0,
              ms(bucket_quantile(commit, 0.99)).c_str(), ms(bucket_quantile(commit, 1.0)).c_str(),
              1000 * total("jobctl_store_commit_seconds_sum{durable=\"true\"}"),
              ms(bucket_quantile(wait, 0.99)).c_str(), ms(bucket_quantile(wait, 1.0)).c_str(), checkpoints,
              total("jobctl_store_wal_checkpoint_frames_total"), ms(bucket_quantile(ckpt, 0.99)).c_str(),
              ms(bucket_quantile(ckpt, 1.0)).c_str(), 1000 * total("jobctl_store_wal_checkpoint_seconds_sum"),
              total("jobctl_placement_latency_seconds_count"), ms(bucket_quantile(placement, 1.0)).c_str(),
              ms(bucket_quantile(server, 0.99)).c_str(), ms(bucket_quantile(server, 1.0)).c_str(),
              100 * total("process_cpu_seconds_total") / run_s);
}

int submit(const std::map<std::string, std::string>& a) {
  const std::string url = get(a, "--url", "");
  const int clients = std::stoi(get(a, "--clients", "16"));
  const double seconds = std::stod(get(a, "--seconds", "10"));
  const double rate = std::stod(get(a, "--rate", "0"));
  const bool with_metrics = get(a, "--metrics", "0") == "1";
  HttpClient metrics_http(url);
  const auto metrics_before = with_metrics ? scrape(metrics_http) : std::map<std::string, double>{};
  std::mutex mu;
  std::vector<double> lat_ms;
  std::atomic<int64_t> ok{0}, errors{0};
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration<double>(seconds);
  std::vector<std::thread> ts;
  for (int c = 0; c < clients; ++c) {
    ts.emplace_back([&, c] {
      HttpClient http(url);
      std::vector<double> mine;
      const double per_client = rate > 0 ? rate / clients : 0;
      int64_t n = 0;
      for (;;) {
        auto planned = t0;
        if (per_client > 0) {  // open loop: the request's planned start, so queueing counts
          planned = t0 + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>((static_cast<double>(n) + static_cast<double>(c) / clients) / per_client));
          if (planned >= end) break;
          std::this_thread::sleep_until(planned);
        } else if (Clock::now() >= end) {
          break;
        }
        const auto start = per_client > 0 ? planned : Clock::now();
        auto r = http.request("POST", "/v1/jobs", kSpec);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        if (r && r->status == 201) {
          ++ok;
          mine.push_back(ms);
        } else {
          ++errors;
        }
        ++n;
      }
      std::lock_guard<std::mutex> lock(mu);
      lat_ms.insert(lat_ms.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : ts) t.join();
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("submit: clients %d, %s, %lld acknowledged in %.1f s = %.0f submits/s, p50 %.2f ms, p99 %.2f ms, errors %lld\n",
              clients, rate > 0 ? ("offered " + std::to_string(static_cast<int>(rate)) + "/s").c_str() : "closed loop",
              static_cast<long long>(ok.load()), took, static_cast<double>(ok.load()) / took, pct(lat_ms, 0.5),
              pct(lat_ms, 0.99), static_cast<long long>(errors.load()));
  if (with_metrics) {
    std::vector<double> sorted = lat_ms;
    std::sort(sorted.begin(), sorted.end());
    std::printf("  submit max %.2f ms; load average %s", sorted.empty() ? 0.0 : sorted.back(), [] {
      std::ifstream in("/proc/loadavg");
      std::string l;
      std::getline(in, l);
      return l.substr(0, l.find(' ', l.find(' ', l.find(' ') + 1) + 1)) + "\n";
    }().c_str());
    print_writer_breakdown(metrics_before, scrape(metrics_http), took);
  }
  return 0;
}

int list(const std::map<std::string, std::string>& a) {
  HttpClient http(get(a, "--url", ""));
  const int n = std::stoi(get(a, "--requests", "1000"));
  std::vector<double> lat;
  int64_t bad = 0;
  size_t items = 0;
  for (int i = 0; i < n; ++i) {
    const auto s = Clock::now();
    auto r = http.request("GET", "/v1/jobs?state=queued&limit=100");
    lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
    if (!r || r->status != 200) ++bad;
    else if (i == 0) items = json::parse(r->body)["jobs"].size();
  }
  std::printf("list: %d x GET /v1/jobs?state=queued&limit=100 (%zu jobs per page): p50 %.2f ms, p99 %.2f ms, errors %lld\n",
              n, items, pct(lat, 0.5), pct(lat, 0.99), static_cast<long long>(bad));
  return 0;
}

double cpu_seconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(in, text);
  std::istringstream f(text.substr(text.rfind(')') + 2));
  std::string x;
  double ut = 0, st = 0;
  for (int i = 3; f >> x; ++i) {
    if (i == 14) ut = std::stod(x);
    if (i == 15) { st = std::stod(x); break; }
  }
  return (ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int heartbeat(const std::map<std::string, std::string>& a) {
  const std::string url = get(a, "--url", "");
  const int workers = std::stoi(get(a, "--workers", "10000"));
  const double interval = std::stod(get(a, "--interval-s", "5"));
  const double seconds = std::stod(get(a, "--seconds", "30"));
  const int threads = std::stoi(get(a, "--threads", "8"));
  const int pid = std::stoi(get(a, "--pid", "0"));
  struct Held { int64_t worker, job, epoch; std::string secret_header; };
  std::vector<Held> held(static_cast<size_t>(workers));
  // Set-up: each worker registers, a job is submitted for it, and it leases that job.
  const auto s0 = Clock::now();
  std::atomic<int> next{0}, setup_errors{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      HttpClient http(url);
      for (int i; (i = next.fetch_add(1)) < workers;) {
        auto reg = http.request("POST", "/v1/workers/register", R"({"name":"sim","capabilities":{"cpu_cores":1}})");
        if (!reg || reg->status != 201) { ++setup_errors; continue; }
        const json r = json::parse(reg->body);
        const int64_t w = r["worker_id"];
        // Every worker call carries the worker's own secret (docs/security.md).
        const std::string secret = "X-Worker-Secret: " + r["worker_secret"].get<std::string>();
        auto sub = http.request("POST", "/v1/jobs", kSpec);
        if (!sub || sub->status != 201) { ++setup_errors; continue; }
        // The job is offered once placement has placed it (a tick later): wait for it.
        auto lease = http.request("POST", "/v1/workers/" + std::to_string(w) + "/lease?wait_s=30", "{}", 0, {secret});
        if (!lease || lease->status != 200) { ++setup_errors; continue; }
        json l = json::parse(lease->body);
        held[static_cast<size_t>(i)] = Held{w, l["job_id"], l["epoch"], secret};
      }
    });
  }
  for (auto& t : ts) t.join();
  ts.clear();
  const double setup_s = std::chrono::duration<double>(Clock::now() - s0).count();
  // The run: worker i heartbeats at i/W of each interval, so the load is even.
  const double cpu0 = pid ? cpu_seconds(pid) : 0;
  const auto t0 = Clock::now();
  // The first round holds each lease's first heartbeat, the one that starts its job (a store
  // write each); the rounds after it are the steady state, measured on their own as well.
  double cpu_after_first = 0;
  std::thread first_round([&] {
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(interval)));
    if (pid) cpu_after_first = cpu_seconds(pid);
  });
  std::atomic<int64_t> sent{0}, errors{0};
  std::mutex mu;
  std::vector<double> lat;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      HttpClient http(url);
      std::vector<double> mine;
      for (int round = 0;; ++round) {
        for (int i = t; i < workers; i += threads) {
          const auto when = t0 + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(interval * (round + static_cast<double>(i) / workers)));
          if (when >= t0 + std::chrono::duration<double>(seconds)) goto done;
          std::this_thread::sleep_until(when);
          const Held& h = held[static_cast<size_t>(i)];
          if (h.job == 0) continue;
          const auto s = Clock::now();
          auto r = http.request("POST", "/v1/jobs/" + std::to_string(h.job) + "/heartbeat",
                                R"({"worker_id":)" + std::to_string(h.worker) + R"(,"epoch":)" +
                                    std::to_string(h.epoch) + R"(,"progress":{"step":)" + std::to_string(round) + "}}",
                                0, {h.secret_header});
          mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
          ++sent;
          if (!r || r->status != 200) ++errors;
        }
      }
    done:
      std::lock_guard<std::mutex> lock(mu);
      lat.insert(lat.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : ts) t.join();
  first_round.join();
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu_end = pid ? cpu_seconds(pid) : 0;
  const double cpu = cpu_end - cpu0;
  const double steady = took > interval ? (cpu_end - cpu_after_first) / (took - interval) : 0;
  std::printf("heartbeat: %d workers every %.0f s (set-up %.1f s, %d set-up errors): %lld heartbeats in %.1f s = %.0f/s, "
              "p50 %.2f ms, p99 %.2f ms, errors %lld; jobctld CPU %.1f%% of one core (after the first round: %.1f%%)\n",
              workers, interval, setup_s, setup_errors.load(), static_cast<long long>(sent.load()), took,
              static_cast<double>(sent.load()) / took, pct(lat, 0.5), pct(lat, 0.99),
              static_cast<long long>(errors.load()), 100.0 * cpu / took, 100.0 * steady);
  return 0;
}

int idle(const std::map<std::string, std::string>& a) {
  const int pid = std::stoi(get(a, "--pid", "0"));
  const int seconds = std::stoi(get(a, "--seconds", "30"));
  const double skip = std::stod(get(a, "--skip-s", "0"));
  if (pid <= 0 || seconds <= 0) { std::fprintf(stderr, "idle: --pid and --seconds (> 0) are required\n"); return 2; }
  std::this_thread::sleep_for(std::chrono::duration<double>(skip));
  const auto t0 = Clock::now();
  const double cpu0 = cpu_seconds(pid);
  double last = cpu0, busiest = 0;
  for (int i = 1; i <= seconds; ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::seconds(i));
    const double now = cpu_seconds(pid);
    busiest = std::max(busiest, now - last);
    last = now;
  }
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("idle: jobctld CPU %.2f%% of a core over %.0f s (after %.0f s), busiest second %.1f%%\n",
              100.0 * (last - cpu0) / took, took, skip, 100.0 * busiest);
  return 0;
}

int lease(const std::map<std::string, std::string>& a) {
  const std::string url = get(a, "--url", "");
  const int jobs = std::stoi(get(a, "--jobs", "50"));
  const double delay = std::stod(get(a, "--delay-s", "0.3"));
  HttpClient submitter(url);
  std::vector<double> lat_ms;
  int errors = 0;
  for (int i = 0; i < jobs; ++i) {
    HttpClient worker_http(url);
    auto reg = worker_http.request("POST", "/v1/workers/register", R"({"name":"lease-bench","capabilities":{"cpu_cores":1}})");
    if (!reg || reg->status != 201) { ++errors; continue; }
    const json r = json::parse(reg->body);
    const int64_t w = r["worker_id"];
    const std::string secret = "X-Worker-Secret: " + r["worker_secret"].get<std::string>();
    // The worker waits in its long-poll (an idle worker); the job comes while it waits.
    Clock::time_point answered;
    bool leased = false;
    std::thread poll([&] {
      auto l = worker_http.request("POST", "/v1/workers/" + std::to_string(w) + "/lease?wait_s=20", "{}", 0, {secret});
      answered = Clock::now();
      leased = l && l->status == 200 && json::parse(l->body).contains("job_id");
    });
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    const auto sent = Clock::now();
    auto sub = submitter.request("POST", "/v1/jobs", kSpec);
    poll.join();
    if (!sub || sub->status != 201 || !leased) { ++errors; continue; }
    lat_ms.push_back(std::chrono::duration<double, std::milli>(answered - sent).count());
  }
  std::vector<double> sorted = lat_ms;
  std::sort(sorted.begin(), sorted.end());
  std::printf("lease: %zu jobs leased to a waiting worker, submit to lease p50 %.2f ms, min %.2f ms, max %.2f ms, "
              "p99 %.2f ms, errors %d\n",
              lat_ms.size(), pct(sorted, 0.5), sorted.empty() ? 0 : sorted.front(), sorted.empty() ? 0 : sorted.back(),
              pct(sorted, 0.99), errors);
  return 0;
}

int fill(const std::map<std::string, std::string>& a) {
  const std::string path = get(a, "--db", "");
  const int64_t n = std::stoll(get(a, "--jobs", "1000000"));
  const int64_t every = std::stoll(get(a, "--queued-every", "10"));
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) { std::fprintf(stderr, "cannot open %s\n", path.c_str()); return 1; }
  sqlite3_exec(db, "PRAGMA synchronous=OFF; BEGIN", nullptr, nullptr, nullptr);
  // The spec and columns of a job the daemon itself stored (job 1, submitted by run.sh).
  sqlite3_stmt* q = nullptr;
  sqlite3_prepare_v2(db, "SELECT spec FROM jobs ORDER BY id LIMIT 1", -1, &q, nullptr);
  if (sqlite3_step(q) != SQLITE_ROW) { std::fprintf(stderr, "fill: submit one job first\n"); return 1; }
  const std::string spec = reinterpret_cast<const char*>(sqlite3_column_text(q, 0));
  sqlite3_finalize(q);
  sqlite3_stmt *ins = nullptr, *ev = nullptr;
  sqlite3_prepare_v2(db,
                     "INSERT INTO jobs (name, spec, state, priority, resource_gpu, resource_gpus, created_ms, "
                     "updated_ms, lease_epoch, recoveries) VALUES ('bench', ?1, ?2, 50, 'any', 1, ?3, ?3, 0, 0)",
                     -1, &ins, nullptr);
  sqlite3_prepare_v2(db,
                     "INSERT INTO job_events (job_id, seq, time_ms, type, from_state, to_state, detail) "
                     "VALUES (?1, 1, ?2, 'submitted', NULL, 'queued', '{\"priority\":50,\"gpu\":\"any\"}')",
                     -1, &ev, nullptr);
  const int64_t t = 1795000000000;
  for (int64_t i = 0; i < n; ++i) {
    const bool queued = i % every == 0;
    sqlite3_bind_text(ins, 1, spec.c_str(), static_cast<int>(spec.size()), SQLITE_STATIC);
    sqlite3_bind_text(ins, 2, queued ? "queued" : "succeeded", -1, SQLITE_STATIC);
    sqlite3_bind_int64(ins, 3, t + i);
    if (sqlite3_step(ins) != SQLITE_DONE) { std::fprintf(stderr, "fill: %s\n", sqlite3_errmsg(db)); return 1; }
    sqlite3_reset(ins);
    sqlite3_bind_int64(ev, 1, sqlite3_last_insert_rowid(db));
    sqlite3_bind_int64(ev, 2, t + i);
    sqlite3_step(ev);
    sqlite3_reset(ev);
  }
  sqlite3_finalize(ins);
  sqlite3_finalize(ev);
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  std::printf("fill: %lld jobs inserted (every %lld-th queued)\n", static_cast<long long>(n), static_cast<long long>(every));
  return 0;
}

// Requests at `per_second` (open loop: latency counts from each request's planned start) until
// `end`, latencies appended to `ms`; returns the failures.
int64_t open_loop(HttpClient& http, const std::string& method, const std::string& path, const std::string& body,
                  double per_second, Clock::time_point end, std::vector<double>& ms) {
  const auto t0 = Clock::now();
  int64_t failures = 0;
  for (int64_t n = 0;; ++n) {
    const auto planned =
        t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(static_cast<double>(n) / per_second));
    if (planned >= end) break;
    std::this_thread::sleep_until(planned);
    auto r = http.request(method, path, body);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - planned).count());
    if (!r || r->status >= 300) ++failures;
  }
  return failures;
}

// Starts jobctld on 127.0.0.1:PORT over DIR with its output discarded; 0 when it could not run.
pid_t spawn_jobctld(const std::string& bin, const std::string& listen, const std::string& dir) {
  std::vector<std::string> argv_s = {bin, "--listen", listen, "--data-dir", dir};
  std::vector<char*> argv_c;
  for (auto& s : argv_s) argv_c.push_back(s.data());
  argv_c.push_back(nullptr);
  posix_spawn_file_actions_t discard;
  posix_spawn_file_actions_init(&discard);
  posix_spawn_file_actions_addopen(&discard, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&discard, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const bool ran = posix_spawn(&pid, bin.c_str(), &discard, nullptr, argv_c.data(), environ) == 0;
  posix_spawn_file_actions_destroy(&discard);
  return ran ? pid : 0;
}

// Seconds from t0 until jobctld at `url` answers /healthz; -1 (and jobctld killed) past 120 s.
double wait_until_healthy(const std::string& url, Clock::time_point t0, pid_t pid, const char* mode) {
  HttpClient http(url);
  while (std::chrono::duration<double>(Clock::now() - t0).count() < 120) {
    auto r = http.request("GET", "/healthz");
    if (r && r->status == 200) return std::chrono::duration<double>(Clock::now() - t0).count();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::fprintf(stderr, "%s: jobctld did not answer /healthz within 120 s\n", mode);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

int start(const std::map<std::string, std::string>& a) {
  const std::string bin = get(a, "--jobctld", ""), dir = get(a, "--data-dir", ""), port = get(a, "--port", "18944");
  const double seconds = std::stod(get(a, "--seconds", "30"));
  const double rate = std::stod(get(a, "--rate", "200"));
  if (bin.empty() || dir.empty()) { std::fprintf(stderr, "start: --jobctld and --data-dir are required\n"); return 2; }
  const std::string listen = "127.0.0.1:" + port;
  const auto t0 = Clock::now();
  const pid_t pid = spawn_jobctld(bin, listen, dir);
  if (pid == 0) {
    std::fprintf(stderr, "start: cannot run %s\n", bin.c_str());
    return 1;
  }
  const std::string url = "http://" + listen;
  const double ready_s = wait_until_healthy(url, t0, pid, "start");
  if (ready_s < 0) return 1;
  const double cpu_at_ready = cpu_seconds(pid);
  const auto load_start = Clock::now();
  auto after = [&load_start](double s) {
    return load_start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  const auto end = after(seconds);
  std::vector<double> submit_ms, health_ms;
  int64_t submit_fail = 0, health_fail = 0;
  constexpr int kClients = 4;
  std::vector<std::vector<double>> per_client(kClients);
  std::vector<int64_t> fails(kClients);
  std::vector<std::thread> ts;
  for (int c = 0; c < kClients; ++c)
    ts.emplace_back([&, c] {
      HttpClient http(url);
      fails[c] = open_loop(http, "POST", "/v1/jobs", kSpec, rate / kClients, end, per_client[c]);
    });
  ts.emplace_back([&] {
    HttpClient http(url);
    health_fail = open_loop(http, "GET", "/healthz", "", 50, end, health_ms);
  });
  std::string cpu_line;
  for (double last = cpu_at_ready, at = 5; at <= seconds + 1e-9; at += 5) {
    std::this_thread::sleep_until(after(at));
    const double now = cpu_seconds(pid);
    char part[32];
    std::snprintf(part, sizeof part, "%s%.0f%%", cpu_line.empty() ? "" : " ", 100.0 * (now - last) / 5);
    cpu_line += part;
    last = now;
  }
  for (auto& t : ts) t.join();
  for (int c = 0; c < kClients; ++c) {
    submit_ms.insert(submit_ms.end(), per_client[c].begin(), per_client[c].end());
    submit_fail += fails[c];
  }
  const double cpu_total = cpu_seconds(pid);
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  const size_t submits = submit_ms.size(), probes = health_ms.size();
  auto max_of = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
  const double submit_max = max_of(submit_ms), health_max = max_of(health_ms);
  std::printf("start: ready (GET /healthz 200) %.2f s after exec, %.1f s of CPU by then; then %.0f s: %zu submits at "
              "%.0f/s p50 %.2f ms, p99 %.2f ms, max %.1f ms, failed %lld; %zu /healthz p50 %.2f ms, p99 %.2f ms, "
              "max %.1f ms, failed %lld; jobctld CPU per 5 s: %s (%.1f s in all)\n",
              ready_s, cpu_at_ready, seconds, submits, rate, pct(submit_ms, 0.5), pct(submit_ms, 0.99),
              submit_max, static_cast<long long>(submit_fail), probes,
              pct(health_ms, 0.5), pct(health_ms, 0.99), health_max,
              static_cast<long long>(health_fail), cpu_line.c_str(), cpu_total);
  return 0;
}

int quiet(const std::map<std::string, std::string>& a) {
  const std::string bin = get(a, "--jobctld", ""), dir = get(a, "--data-dir", ""), port = get(a, "--port", "18945");
  const double skip = std::stod(get(a, "--skip-s", "30"));
  const int windows = std::stoi(get(a, "--windows", "4"));
  const double window_s = std::stod(get(a, "--window-s", "15"));
  if (bin.empty() || dir.empty()) { std::fprintf(stderr, "quiet: --jobctld and --data-dir are required\n"); return 2; }
  const std::string listen = "127.0.0.1:" + port;
  const auto t0 = Clock::now();
  const pid_t pid = spawn_jobctld(bin, listen, dir);
  if (pid == 0) {
    std::fprintf(stderr, "quiet: cannot run %s\n", bin.c_str());
    return 1;
  }
  const double ready_s = wait_until_healthy("http://" + listen, t0, pid, "quiet");
  if (ready_s < 0) return 1;
  std::this_thread::sleep_for(std::chrono::duration<double>(skip));
  const double cpu_settled = cpu_seconds(pid);
  std::string cpu_line;
  const auto w0 = Clock::now();
  double last = cpu_settled;
  for (int i = 1; i <= windows; ++i) {
    std::this_thread::sleep_until(w0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(i * window_s)));
    const double now = cpu_seconds(pid);
    char part[32];
    std::snprintf(part, sizeof part, "%s%.2f%%", cpu_line.empty() ? "" : " ", 100.0 * (now - last) / window_s);
    cpu_line += part;
    last = now;
  }
  const double measured = std::chrono::duration<double>(Clock::now() - w0).count();
  // Printed before the stop, which may take long.
  std::printf("quiet: ready %.2f s after exec, %.1f s of CPU by %.0f s later; then jobctld CPU per %.0f s: %s "
              "(%.2f%% over %.0f s)\n",
              ready_s, cpu_settled, skip, window_s, cpu_line.c_str(), 100.0 * (last - cpu_settled) / measured, measured);
  std::fflush(stdout);
  const auto sigterm = Clock::now();
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  std::printf("quiet: SIGTERM to exit %.2f s\n", std::chrono::duration<double>(Clock::now() - sigterm).count());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: jobctl-bench-daemon submit|list|heartbeat|lease|fill|idle|start|quiet [--flag value]...\n");
    return 2;
  }
  const std::string mode = argv[1];
  const auto a = args(argc, argv);
  if (mode == "submit") return submit(a);
  if (mode == "list") return list(a);
  if (mode == "heartbeat") return heartbeat(a);
  if (mode == "lease") return lease(a);
  if (mode == "fill") return fill(a);
  if (mode == "idle") return idle(a);
  if (mode == "start") return start(a);
  if (mode == "quiet") return quiet(a);
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
