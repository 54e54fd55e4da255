// Settings of auth, request limits and metrics: the "auth", "limits" and "metrics"
// sections of jobctld's configuration file (docs/configuration.md, docs/security.md).
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/expected.h"

namespace jobctl::daemon::auth {

struct AuthOptions {
  // Off by default so that a fresh install and the other test suites need no tokens; turn it on
  // wherever more than one person can reach the port (docs/security.md).
  bool enabled = false;
};

struct LimitsOptions {
  // Token bucket per API token (auth only): sustained rate and burst; 0 = unlimited.
  double requests_per_s = 50;
  double burst = 100;
  // Worker tokens are often shared by a whole fleet: their own rate (0 = unlimited).
  double worker_requests_per_s = 0;
  // Jobs one user may have waiting (queued or held) at once; 0 = unlimited.
  int64_t max_waiting_jobs_per_user = 10000;
  // Spend per user per calendar month (UTC) from the ledger; 0 = no budget. A job submitted by a
  // user at or over budget is held with the reason.
  double monthly_budget_usd = 0;
  std::map<std::string, double> user_budgets_usd;  // per-user overrides
  // When a user's spend this month crosses the budget while jobs run (auth_budget_watch.h):
  // "finish" lets the running jobs finish and holds the waiting ones; "stop" also checkpoints and
  // holds the running ones.
  std::string over_budget = "finish";
};

struct MetricsOptions {
  bool enabled = true;        // GET /metrics
  bool require_token = true;  // with auth on: /metrics needs an admin token (else it is open)
};

struct SecurityOptions {
  AuthOptions auth;
  LimitsOptions limits;
  MetricsOptions metrics;
};

// Applies the "auth", "limits" and "metrics" sections of a configuration document (absent ones
// keep their values). Unknown keys and wrong types are errors naming the key.
Status apply_security_config(const nlohmann::json& root, SecurityOptions& options);
// Checks ranges.
Status validate_security(const SecurityOptions& options);

}  // namespace jobctl::daemon::auth
