// The check in front of the route table when auth is enabled (docs/security.md):
// authentication (Authorization: Bearer <token>), the role a route needs, a user's access to a
// job, and the per-token request rate. Installed with Router::set_gate by jobctld's main.
//
//   route                                              roles
//   GET /healthz, anything outside /v1/ and /metrics   anyone, no token needed (the dashboard's files)
//   the worker protocol (register, lease, heartbeat,
//     complete, fail, preempt, checkpoints)             worker, admin
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
// Ownership: the returned gate borrows the TokenService, the RateLimiter and the Store (they must
// outlive the router). Thread safety: the gate may run on many threads at once.
#pragma once

#include <string>
#include <string_view>

#include "net/router.h"
#include "daemon/auth/auth_options.h"
#include "daemon/auth/auth_rate_limiter.h"
#include "daemon/auth/auth_service.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::http {

// Which roles may call a route (by its pattern).
enum class Access { anyone, any_token, worker, user, admin };
Access access_for(std::string_view method, std::string_view pattern, const auth::SecurityOptions& options);

// The token of an "Authorization: Bearer <token>" header; empty when absent or another scheme.
std::string bearer_token(std::string_view authorization);

net::Gate make_auth_gate(auth::TokenService& tokens, auth::RateLimiter& limiter, store::Store& store,
                    auth::SecurityOptions options);

}  // namespace jobctl::daemon::http
