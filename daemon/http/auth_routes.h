// The operator routes (docs/api.md "Tokens", "Metrics"):
//   POST /v1/tokens               create a token  {"user": "alice", "role": "user"} -> 201 with the secret (shown once)
//   GET  /v1/tokens               list tokens (never the secrets)
//   POST /v1/tokens/{id}/revoke   revoke one (idempotent)
//   GET  /v1/auth/whoami          the calling token's user and role (jobctl login checks with it)
//   GET  /metrics                 Prometheus text format
// Each declares who may call it (route_access.h: the token routes an admin, whoami any token,
// /metrics an admin unless metrics.require_token is false). With auth off the token routes
// answer 403: tokens are then made with `jobctld --create-token`.
//
// Ownership: the handlers borrow the services (they must outlive the router).
#pragma once

#include "net/router.h"
#include "daemon/auth/auth_service.h"
#include "daemon/metrics/metrics.h"

namespace jobctl::daemon::http {

void add_auth_routes(net::Router& router, auth::TokenService& tokens, bool auth_enabled);
void add_metrics_route(net::Router& router, const metrics::Metrics& metrics);

}  // namespace jobctl::daemon::http
