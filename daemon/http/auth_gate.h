// The check in front of the route table (docs/security.md), run when a request's headers have
// arrived and before any of its body is read (net/router.h, Router::admit): authentication
// (Authorization: Bearer <token>) and the role a route needs when auth is on, a user's access to
// a job, the per-token request rate — and, always, the worker's identity on the worker protocol.
// Installed with Router::set_gate by install_hardening (auth_setup.h).
//
//   route                                              roles (auth on)
//   GET /healthz, anything outside /v1/ and /metrics   anyone, no token needed (the dashboard's files)
//   the worker protocol (register, lease, heartbeat,
//     complete, fail, preempt, checkpoint upload and
//     reject)                                          worker, admin
//   GET /v1/jobs/{id}/checkpoints[/{step}]             the job's owner (user), its lease holder
//                                                      (worker), admin
//   /v1/tokens...                                      admin
//   GET /metrics                                       admin (anyone when metrics.require_token is false)
//   GET /v1/auth/whoami                                any valid token
//   every other /v1/ route                              user, admin
//
// A `user` reaches /v1/jobs/{id}/... only for their own jobs: another user's job answers 404, as
// if it did not exist. Answers: 401 (code unauthenticated, with WWW-Authenticate) for a missing,
// malformed, unknown or revoked token; 403 (permission_denied) for the wrong role; 429
// (rate_limited, with Retry-After) past the token's rate.
//
// Worker identity (auth on or off): every call of the worker protocol except register carries
// the worker's own secret (X-Worker-Secret, auth/worker_credentials.h); the gate resolves it to
// the worker's id (HttpRequest::worker_id) or answers 403. A call may act only for that worker:
// the worker id in the path (lease) or the query (checkpoint upload) is compared here, the one in
// a JSON body by the handler (check_acting_worker). A worker reads a job's checkpoints only while
// it holds the job's lease.
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
#include "daemon/store/store.h"
#include "net/router.h"

namespace jobctl::daemon::http {

// Which roles may call a route (by its pattern).
enum class Access { anyone, any_token, worker, checkpoint_reader, user, admin };
Access access_for(std::string_view method, std::string_view pattern, const auth::SecurityOptions& options);

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
