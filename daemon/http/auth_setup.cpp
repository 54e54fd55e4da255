#include "daemon/http/auth_setup.h"

#include <ostream>

#include <nlohmann/json.hpp>

#include "daemon/http/auth_gate.h"
#include "daemon/http/auth_routes.h"
#include "daemon/http/route_access.h"
#include "net/json_body.h"
#include "scheduler/job_state.h"

namespace jobctl::daemon::http {

Expected<std::unique_ptr<Hardening>> install_hardening(net::Router& router, jobs::JobService& svc,
                                             store::Store& store, const Clock& clock,
                                             const auth::SecurityOptions& options,
                                             auth::SpendSource* spend,
                                             std::function<double()> webhook_delivery_lag_s) {
  auto h = std::make_unique<Hardening>(store, clock, options, spend);
  GateServices gate{nullptr, nullptr, &h->workers, &store};
  if (options.auth.enabled) {
    gate.tokens = &h->tokens;
    gate.limiter = &h->limiter;
    svc.set_admission(&h->admission);
  }
  router.set_gate(make_request_gate(gate, options));
  add_auth_routes(router, h->tokens, options.auth.enabled);

  metrics::MetricsSources sources;
  sources.jobs_by_state = [&store]() -> Expected<std::map<std::string, int64_t>> {
    auto counts = store.count_jobs_by_state();
    if (!counts) return counts.error();
    std::map<std::string, int64_t> out;
    for (const auto& [state, n] : *counts) out[std::string(scheduler::to_string(state))] = n;
    return out;
  };
  sources.spend_by_kind = [spend = &h->ledger_spend] { return spend->month_by_kind(); };
  sources.queued_jobs = [&svc] { return static_cast<int64_t>(svc.queued_count()); };
  sources.waiting_workers = [&svc] { return static_cast<int64_t>(svc.waiting_workers()); };
  sources.held_heartbeats = [&svc] { return svc.held_heartbeats(); };
  sources.webhook_delivery_lag_s = std::move(webhook_delivery_lag_s);
  h->metrics = std::make_unique<metrics::Metrics>(std::move(sources));
  if (options.metrics.enabled) {
    metrics::Metrics* m = h->metrics.get();
    router.set_observer([m](const std::string& method, const std::string& route, int status, double s) {
      m->observe_http(method, route, status, s);
    });
    h->queue_wait = std::make_unique<QueueWaitMetric>(svc, *m);
    add_metrics_route(router, *m);
  }
  if (auto st = check_route_access(router); !st) {
    // The start stops here and `h` goes: nothing installed above may keep pointing into it, and
    // a router served anyway refuses every request.
    svc.set_admission(nullptr);
    router.set_observer(nullptr);
    router.set_gate([why = st.error().message](net::HttpRequest&, const net::RouteSpec&, const net::PathParams&) {
      return std::optional<net::HttpResponse>(
          net::error_response(make_error(ErrorCode::permission_denied, "jobctld did not start: " + why)));
    });
    return st.error();
  }
  return h;
}

int create_token_command(store::Store& store, const Clock& clock, const std::string& user,
                         const std::string& role, std::ostream& out, std::ostream& err) {
  auth::TokenService tokens(store, clock);
  auto made = tokens.create(user, role);
  if (!made) {
    err << "jobctld: cannot create the token: " << made.error().message;
    if (!made.error().field.empty()) err << " (" << made.error().field << ")";
    err << "\n";
    return 2;
  }
  out << made->secret << "\n";
  err << "jobctld: created " << role << " token " << made->row.id << " for user " << user
      << " (prefix " << made->row.prefix << "); it is shown only now: keep it secret\n";
  return 0;
}

}  // namespace jobctl::daemon::http
