// The check in front of the route table (docs/security.md), run when a request's headers have
// arrived and before any of its body is read (net/router.h, Router::admit): authentication
// (Authorization: Bearer <token>) and the role a route needs when auth is on, a user's access to
// a job, the per-token request rate — and, always, the worker's identity on the worker protocol.
// What each route needs is read from the route itself (its RouteAccess: route_access.h, which
// lists who each Access admits); a route that declares none is refused. What the gate learns is
// attached to the request as its Caller (caller.h). Installed by install_hardening (auth_setup.h).
//
// Answers: 401 (code unauthenticated, with WWW-Authenticate) for a missing, malformed, unknown or
// revoked token; 403 (permission_denied) for the wrong role; 429 (rate_limited, with
// Retry-After) past the token's rate; 404 for a job (the route's job_param) a user token does
// not own, as if it did not exist.
//
// Worker identity (auth on or off): every call of the worker protocol but register (Access::
// worker) carries the worker's own secret (X-Worker-Secret, auth/worker_credentials.h); the gate
// resolves it to the worker's id (Caller::worker_id) or answers 403. A call may act only for that
// worker: the worker id in the path (the route's worker_param) or the query (worker_id) is
// compared here, the one in a JSON body by the handler (check_acting_worker). A worker reads a
// job's checkpoints only while it holds the job's lease.
//
// Ownership: the gate borrows the services it is given (they must outlive the router). Thread
// safety: the gate may run on many threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/auth/auth_options.h"
#include "daemon/auth/auth_rate_limiter.h"
#include "daemon/auth/auth_service.h"
#include "daemon/auth/worker_credentials.h"
#include "daemon/http/caller.h"
#include "daemon/http/route_access.h"
#include "daemon/store/store.h"
#include "net/router.h"

namespace jobctl::daemon::http {

// The token of an "Authorization: Bearer <token>" header; empty when absent or another scheme.
std::string bearer_token(std::string_view authorization);

struct GateServices {
  auth::TokenService* tokens = nullptr;    // auth on; null: auth off (no tokens, no roles)
  auth::RateLimiter* limiter = nullptr;    // with tokens
  auth::WorkerCredentials* workers = nullptr;
  store::Store* store = nullptr;
};

net::Gate make_request_gate(GateServices services, auth::SecurityOptions options);

// Whether a request may be served on one of the HTTP server's reserved connections
// (net/server.h): one the gate identified — a valid token, a worker's secret — or GET /healthz,
// so that workers, authenticated clients and health checks are served while idle or anonymous
// connections hold every other slot.
bool may_use_reserved_connection(const net::HttpRequest& request);

// A worker-protocol handler's check that the worker a JSON body names is the one whose secret
// the request carries (code permission_denied, field worker_id, otherwise).
Status check_acting_worker(const net::HttpRequest& request, int64_t claimed_worker_id);

}  // namespace jobctl::daemon::http
