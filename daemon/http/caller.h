// Who is calling: what the request gate (auth_gate.h) learnt from a request's credentials,
// attached to the request (net::HttpRequest::context) for the handlers. Handlers read it with
// caller_of(); they never look at headers or roles themselves, beyond scoping what they list.
//
// Thread safety: a plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "daemon/auth/auth_service.h"
#include "net/message.h"

namespace jobctl::daemon::http {

struct Caller {
  int64_t token_id = 0;            // the API token (auth on); 0: none
  std::string user;                // the token's user (auth on); "" otherwise
  std::optional<auth::Role> role;  // the token's role (auth on); none otherwise
  std::string permissions;         // granted to the token beyond its role (auth/auth_service.h)
  int64_t worker_id = 0;           // the worker whose secret the request carries (worker routes); 0: none

  // A token or a worker secret was verified.
  bool identified() const { return role.has_value() || worker_id != 0; }
  // The user whose jobs alone this caller sees: a user token's; none (all jobs) for admins,
  // workers and without auth.
  std::optional<std::string> job_scope() const {
    if (role == auth::Role::user) return user;
    return std::nullopt;
  }
  // Whether this caller may submit command jobs, which run the submitter's own program on the
  // workers (docs/security.md): without auth, an admin, or a token granted "commands".
  bool may_submit_commands() const {
    return !role || *role == auth::Role::admin || permissions.find(auth::kCommandsPermission) != std::string::npos;
  }
};

// The caller the gate attached to `request`; an anonymous one (no token, no worker) when none.
inline const Caller& caller_of(const net::HttpRequest& request) {
  static const Caller kAnonymous;
  const Caller* c = std::any_cast<Caller>(&request.context);
  return c != nullptr ? *c : kAnonymous;
}

}  // namespace jobctl::daemon::http
