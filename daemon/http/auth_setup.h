// Wires auth, limits and metrics into a running jobctld, so that main.cpp needs only a few lines:
// the request gate (auth_gate.h: worker identity always; tokens, roles and rate limits when
// auth.enabled), per-user submit limits, the metrics observer and the /v1/tokens,
// /v1/auth/whoami and /metrics routes.
//
// Ownership: the returned Hardening owns those parts and borrows the router, service and store,
// which must outlive it; it must outlive the HTTP server. Thread safety: build before serving.
#pragma once

#include <iosfwd>
#include <functional>
#include <memory>
#include <string>

#include "base/clock.h"
#include "base/expected.h"
#include "net/router.h"
#include "daemon/auth/auth_admission.h"
#include "daemon/auth/auth_budget_ledger.h"
#include "daemon/auth/auth_options.h"
#include "daemon/auth/auth_rate_limiter.h"
#include "daemon/auth/auth_service.h"
#include "daemon/auth/worker_credentials.h"
#include "daemon/jobs/job_service.h"
#include "daemon/metrics/metrics.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::http {

// Observes how long each leased job waited in the queue, into the metrics, while it lives.
class QueueWaitMetric final : public jobs::JobObserver {
 public:
  QueueWaitMetric(jobs::JobService& jobs, metrics::Metrics& metrics) : jobs_(jobs), metrics_(metrics) {
    jobs_.add_observer(this);
  }
  ~QueueWaitMetric() override { jobs_.remove_observer(this); }
  QueueWaitMetric(const QueueWaitMetric&) = delete;
  QueueWaitMetric& operator=(const QueueWaitMetric&) = delete;
  void job_leased(int64_t queue_wait_ms) override {
    metrics_.observe_queue_wait(static_cast<double>(queue_wait_ms) / 1000.0);
  }

 private:
  jobs::JobService& jobs_;
  metrics::Metrics& metrics_;
};

struct Hardening {
  Hardening(store::Store& store, const Clock& clock, const auth::SecurityOptions& options,
            auth::SpendSource* spend)
      : ledger_spend(store, clock),
        tokens(store, clock),
        workers(store),
        limiter(clock),
        admission(options.limits, clock, spend != nullptr ? spend : &ledger_spend) {}
  auth::LedgerSpend ledger_spend;  // the cost ledger's spend (budgets, the spend metric)
  auth::TokenService tokens;
  auth::WorkerCredentials workers;
  auth::RateLimiter limiter;
  auth::UserLimitsAdmission admission;
  std::unique_ptr<metrics::Metrics> metrics;
  std::unique_ptr<QueueWaitMetric> queue_wait;  // after `metrics`: stops observing before it goes
};

// `spend`: where users' spend comes from; null: the cost ledger (LedgerSpend). Not owned.
// `webhook_delivery_lag_s`: the webhook dispatcher's lag for /metrics (none: not exported).
// Call once every other route is added: the whole table is then checked (check_route_access,
// route_access.h), and a route without declared access is an error jobctld does not start with.
Expected<std::unique_ptr<Hardening>> install_hardening(net::Router& router, jobs::JobService& service,
                                             store::Store& store, const Clock& clock,
                                             const auth::SecurityOptions& options,
                                             auth::SpendSource* spend = nullptr,
                                             std::function<double()> webhook_delivery_lag_s = {});

// `jobctld --create-token USER --role ROLE --data-dir DIR`: creates a token in the database and
// prints it once (on `out`, with a JSON line describing it). Returns the exit code.
int create_token_command(store::Store& store, const Clock& clock, const std::string& user,
                         const std::string& role, std::ostream& out, std::ostream& err);

}  // namespace jobctl::daemon::http
