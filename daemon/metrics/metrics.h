// jobctld's metrics in the Prometheus text exposition format (version 0.0.4), served at
// GET /metrics (docs/operations.md lists every metric):
//   jobctl_http_requests_total{method,route,code}       counter
//   jobctl_http_request_duration_seconds{method,route}   histogram (route = the route pattern)
//   jobctl_jobs{state}                                   gauge, from the store at scrape time
//   jobctl_queue_wait_seconds                            histogram, observed at each lease
//   jobctl_placement_latency_seconds                     histogram, observed by placement
//   jobctl_spend_usd{kind}                               gauge, this month's ledger spend
//   jobctl_queued_jobs, jobctl_waiting_workers           gauges (in memory)
//   jobctl_webhook_delivery_lag_seconds                  gauge, the longest a due delivery waits
//   jobctl_heartbeats_held_total                         counter, heartbeats held while the store could not write
//   jobctl_store_commit_seconds{durable}                 histogram, each write batch's COMMIT
//   jobctl_store_commit_queue_wait_seconds               histogram, a batch's longest queue wait
//   jobctl_store_commit_changes                          histogram, changes per COMMIT
//   jobctl_store_wal_checkpoint_seconds                  histogram, each WAL checkpoint
//   jobctl_store_wal_checkpoint_frames_total             counter, WAL frames checkpointed
//   process_resident_memory_bytes, process_cpu_seconds_total, process_open_fds
//
// Ownership: the collectors given to the constructor are called at scrape time and must stay
// valid. Thread safety: every observe_* and render() is safe from any thread; observing takes a
// short mutex (one per histogram family) and never blocks on I/O.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "base/expected.h"
#include "base/mutex.h"

namespace jobctl::daemon::metrics {

// A histogram with fixed bucket bounds: seconds (kBounds) unless the constructor names others
// (at most kBounds.size() of them, ascending, static storage: e.g. kBatchBounds).
class Histogram {
 public:
  static constexpr std::array<double, 16> kBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                      0.1,    0.25,  0.5,    1,     2.5,  5,     10,
                                                      30,     60};
  // Counts (changes per store commit).
  static constexpr std::array<double, 10> kBatchBounds = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  Histogram() = default;
  template <size_t N>
  explicit Histogram(const std::array<double, N>& bounds) : bounds_(bounds.data()), n_bounds_(N) {
    static_assert(N <= kBounds.size());
  }
  void observe(double value);
  // Appends the _bucket/_sum/_count lines of `name` with `labels` ("" or `a="b",c="d"`).
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  const double* bounds_ = kBounds.data();
  size_t n_bounds_ = kBounds.size();
  std::array<uint64_t, kBounds.size() + 1> counts_{};  // [n_bounds_]: +Inf only
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct MetricsSources {
  // Jobs per state name (the store's count; may be slow on a big store: called per scrape).
  std::function<Expected<std::map<std::string, int64_t>>()> jobs_by_state;
  // This month's spend by ledger kind ("local", "on_demand", "spot"); absent: not exported.
  std::function<Expected<std::map<std::string, double>>()> spend_by_kind;
  std::function<int64_t()> queued_jobs;
  std::function<int64_t()> waiting_workers;
  // Heartbeats answered and held in memory while the store could not write (since start).
  std::function<int64_t()> held_heartbeats;
  // How long the webhook delivery longest past its due time has waited for a sender (seconds).
  std::function<double()> webhook_delivery_lag_s;
};

class Metrics {
 public:
  explicit Metrics(MetricsSources sources = {}) : sources_(std::move(sources)) {}

  void observe_http(const std::string& method, const std::string& route, int status, double seconds);
  void observe_queue_wait(double seconds);
  void observe_placement(double seconds);
  // One store write batch (daemon/store/store.h, CommitTiming): called on the writer thread
  // after every COMMIT, so it only bumps counters (no allocation).
  void observe_store_commit(bool durable, size_t changes, double queue_wait_s, double commit_s);
  // One WAL checkpoint of the store's writer: how long, how many frames it copied.
  void observe_wal_checkpoint(double seconds, int64_t frames);

  // The whole exposition, ending in a newline.
  std::string render() const;

 private:
  MetricsSources sources_;
  mutable Mutex mu_;
  std::map<std::pair<std::string, std::string>, Histogram> http_latency_ JOBCTL_GUARDED_BY(mu_);  // (method, route)
  std::map<std::tuple<std::string, std::string, int>, uint64_t> http_count_ JOBCTL_GUARDED_BY(mu_);  // (method, route, code)
  Histogram queue_wait_ JOBCTL_GUARDED_BY(mu_);
  Histogram placement_ JOBCTL_GUARDED_BY(mu_);
  // The store's writer: its own mutex, so a commit never waits for a scrape's HTTP maps.
  mutable Mutex store_mu_;
  Histogram commit_durable_ JOBCTL_GUARDED_BY(store_mu_);
  Histogram commit_relaxed_ JOBCTL_GUARDED_BY(store_mu_);
  Histogram commit_queue_wait_ JOBCTL_GUARDED_BY(store_mu_);
  Histogram commit_changes_ JOBCTL_GUARDED_BY(store_mu_){Histogram::kBatchBounds};
  Histogram wal_checkpoint_ JOBCTL_GUARDED_BY(store_mu_);
  uint64_t wal_checkpoint_frames_ JOBCTL_GUARDED_BY(store_mu_) = 0;
};

// `value` escaped for a label value (backslash, double quote, newline).
std::string escape_label(const std::string& value);

}  // namespace jobctl::daemon::metrics
