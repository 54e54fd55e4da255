#include "daemon/metrics/metrics.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

namespace jobctl::daemon::metrics {

namespace {

// The shortest text that reads back as the same double ("0.0025", not "0.0025000000000000001").
std::string num(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("NaN");
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

// Resident memory and CPU time of this process, from /proc/self/stat (Linux).
bool process_stats(double& rss_bytes, double& cpu_seconds) {
  std::ifstream in("/proc/self/stat");
  std::string text;
  if (!std::getline(in, text)) return false;
  const size_t close = text.rfind(')');  // the command name may contain spaces
  if (close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  double utime = 0, stime = 0, rss_pages = 0;
  for (int i = 3; fields >> f; ++i) {  // field 3 is the state
    if (i == 14) utime = std::stod(f);
    if (i == 15) stime = std::stod(f);
    if (i == 24) { rss_pages = std::stod(f); break; }
  }
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  cpu_seconds = (utime + stime) / (ticks > 0 ? ticks : 100);
  rss_bytes = rss_pages * static_cast<double>(sysconf(_SC_PAGESIZE));
  return true;
}

}  // namespace

std::string escape_label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < n_bounds_ && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  const std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < n_bounds_; ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{" + labels + sep + "le=\"" + num(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{" + labels + sep + "le=\"+Inf\"} " + std::to_string(count_) + "\n";
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += name + "_sum" + braces + " " + num(sum_) + "\n";
  out += name + "_count" + braces + " " + std::to_string(count_) + "\n";
}

void Metrics::observe_http(const std::string& method, const std::string& route, int status,
                           double seconds) {
  MutexLock lock(mu_);
  http_latency_[{method, route}].observe(seconds);
  ++http_count_[{method, route, status}];
}

void Metrics::observe_queue_wait(double seconds) {
  MutexLock lock(mu_);
  queue_wait_.observe(seconds);
}

void Metrics::observe_placement(double seconds) {
  MutexLock lock(mu_);
  placement_.observe(seconds);
}

void Metrics::observe_store_commit(bool durable, size_t changes, double queue_wait_s, double commit_s) {
  MutexLock lock(store_mu_);
  (durable ? commit_durable_ : commit_relaxed_).observe(commit_s);
  commit_queue_wait_.observe(queue_wait_s);
  commit_changes_.observe(static_cast<double>(changes));
}

void Metrics::observe_wal_checkpoint(double seconds, int64_t frames) {
  MutexLock lock(store_mu_);
  wal_checkpoint_.observe(seconds);
  wal_checkpoint_frames_ += static_cast<uint64_t>(std::max<int64_t>(frames, 0));
}

std::string Metrics::render() const {
  std::string out;
  out.reserve(16384);
  // Collected outside the lock: these read the store.
  std::map<std::string, int64_t> jobs;
  bool jobs_ok = false;
  if (sources_.jobs_by_state) {
    if (auto j = sources_.jobs_by_state()) {
      jobs = std::move(*j);
      jobs_ok = true;
    }
  }
  std::map<std::string, double> spend;
  bool spend_ok = false;
  if (sources_.spend_by_kind) {
    if (auto s = sources_.spend_by_kind()) {
      spend = std::move(*s);
      spend_ok = true;
    }
  }
  if (jobs_ok) {
    header(out, "jobctl_jobs", "gauge", "Jobs stored, by state.");
    for (const char* state : {"queued", "held", "placed", "running", "preempted", "succeeded", "failed", "cancelled"}) {
      auto it = jobs.find(state);
      out += std::string("jobctl_jobs{state=\"") + state + "\"} " +
             std::to_string(it == jobs.end() ? 0 : it->second) + "\n";
    }
  }
  if (sources_.queued_jobs) {
    header(out, "jobctl_queued_jobs", "gauge", "Jobs in the in-memory queue, waiting for a worker.");
    out += "jobctl_queued_jobs " + std::to_string(sources_.queued_jobs()) + "\n";
  }
  if (sources_.waiting_workers) {
    header(out, "jobctl_waiting_workers", "gauge", "Workers in a lease long-poll.");
    out += "jobctl_waiting_workers " + std::to_string(sources_.waiting_workers()) + "\n";
  }
  if (sources_.held_heartbeats) {
    header(out, "jobctl_heartbeats_held_total", "counter",
           "Heartbeats answered while the store could not write them, held in memory and written once it could.");
    out += "jobctl_heartbeats_held_total " + std::to_string(sources_.held_heartbeats()) + "\n";
  }
  if (sources_.webhook_delivery_lag_s) {
    header(out, "jobctl_webhook_delivery_lag_seconds", "gauge",
           "How long the webhook delivery longest past its due time has waited for a sender (0: none waits).");
    out += "jobctl_webhook_delivery_lag_seconds " + num(sources_.webhook_delivery_lag_s()) + "\n";
  }
  if (spend_ok) {
    header(out, "jobctl_spend_usd", "gauge", "Spend this calendar month (UTC) from the cost ledger, in USD, by kind.");
    for (const auto& [kind, usd] : spend)
      out += "jobctl_spend_usd{kind=\"" + escape_label(kind) + "\"} " + num(usd) + "\n";
  }
  {
    MutexLock lock(mu_);
    header(out, "jobctl_http_requests_total", "counter", "HTTP requests answered, by method, route pattern and status code.");
    for (const auto& [key, n] : http_count_) {
      const auto& [method, route, code] = key;
      out += "jobctl_http_requests_total{method=\"" + escape_label(method) + "\",route=\"" +
             escape_label(route) + "\",code=\"" + std::to_string(code) + "\"} " + std::to_string(n) + "\n";
    }
    header(out, "jobctl_http_request_duration_seconds", "histogram",
           "Time from dispatch to answer, by method and route pattern (lease long-polls include their wait).");
    for (const auto& [key, h] : http_latency_)
      h.render(out, "jobctl_http_request_duration_seconds",
               "method=\"" + escape_label(key.first) + "\",route=\"" + escape_label(key.second) + "\"");
    header(out, "jobctl_queue_wait_seconds", "histogram", "Time a job waited queued before a worker leased it.");
    queue_wait_.render(out, "jobctl_queue_wait_seconds", "");
    header(out, "jobctl_placement_latency_seconds", "histogram", "Time to decide one job's placement.");
    placement_.render(out, "jobctl_placement_latency_seconds", "");
  }
  {
    MutexLock lock(store_mu_);
    header(out, "jobctl_store_commit_seconds", "histogram",
           "Time in each store write batch's COMMIT: writing the WAL and, for a durable batch, its fsync.");
    commit_durable_.render(out, "jobctl_store_commit_seconds", "durable=\"true\"");
    commit_relaxed_.render(out, "jobctl_store_commit_seconds", "durable=\"false\"");
    header(out, "jobctl_store_commit_queue_wait_seconds", "histogram",
           "Longest time a change of each write batch waited in the writer's queue before the batch began.");
    commit_queue_wait_.render(out, "jobctl_store_commit_queue_wait_seconds", "");
    header(out, "jobctl_store_commit_changes", "histogram", "Changes per store write batch (one COMMIT).");
    commit_changes_.render(out, "jobctl_store_commit_changes", "");
    header(out, "jobctl_store_wal_checkpoint_seconds", "histogram",
           "Time of each WAL checkpoint run by the store's writer after a commit (copying WAL frames into the database).");
    wal_checkpoint_.render(out, "jobctl_store_wal_checkpoint_seconds", "");
    header(out, "jobctl_store_wal_checkpoint_frames_total", "counter", "WAL frames copied into the database by checkpoints.");
    out += "jobctl_store_wal_checkpoint_frames_total " + std::to_string(wal_checkpoint_frames_) + "\n";
  }
  double rss = 0, cpu = 0;
  if (process_stats(rss, cpu)) {
    header(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    out += "process_resident_memory_bytes " + num(rss) + "\n";
    header(out, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
    out += "process_cpu_seconds_total " + num(cpu) + "\n";
  }
  std::error_code ec;
  int64_t fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++fds;
  if (!ec) {
    header(out, "process_open_fds", "gauge", "Number of open file descriptors.");
    out += "process_open_fds " + std::to_string(fds) + "\n";
  }
  return out;
}

}  // namespace jobctl::daemon::metrics
