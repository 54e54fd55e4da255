// Who may call a route, declared with the route itself (net::RouteSpec::access) and read by the
// request gate (auth_gate.h) from the match — never from a second list of patterns. A route that
// declares no access is refused: by the gate at request time, and by check_route_access at
// start-up, which jobctld runs before it listens (deny by default).
//
//   Access             who (auth on)                                   worker secret
//   anyone             no token needed (/healthz)                      -
//   any_token          any valid token                                 -
//   user               a user's or an admin's token                    -
//   admin              an admin's token                                -
//   metrics            admin; anyone when metrics.require_token false  -
//   new_worker         a worker's or an admin's token (registration)   -
//   worker             a worker's or an admin's token                  always (auth on or off)
//   checkpoint_reader  the job's owner, its lease holder, an admin     the lease holder's
//
// job_param names the {placeholder} holding the job a user token must own (another user's job
// answers 404, as if it did not exist); worker_param the one naming the worker a worker call acts
// for (else its worker_id query parameter, when sent).
//
// Thread safety: plain values and pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "net/router.h"

namespace jobctl::daemon::http {

enum class Access { anyone, any_token, user, admin, metrics, new_worker, worker, checkpoint_reader };
std::string_view to_string(Access access);

struct RouteAccess {
  RouteAccess(Access needed, std::string job = {}, std::string worker = {})  // NOLINT: implicit from Access
      : who(needed), job_param(std::move(job)), worker_param(std::move(worker)) {}

  Access who;
  std::string job_param;     // "id": a user token must own the job /v1/jobs/{id}; "": none
  std::string worker_param;  // "id": the worker /v1/workers/{id}/lease acts for; "": the query's worker_id
};

// A route declared whole: what net::RouteSpec holds, with who may call it.
net::RouteSpec route(std::string method, std::string pattern, RouteAccess access, net::Handler handler,
                     net::Dispatch dispatch = net::Dispatch::pool, net::RequestBody body = {});

// The access `route` declares; null when it declares none (or something else).
const RouteAccess* access_of(const net::RouteSpec& route);

// The position among `pattern`'s {placeholders} of {name}; nullopt when it has none of that name.
std::optional<size_t> placeholder_index(std::string_view pattern, std::string_view name);

// Start-up's check of the whole table: every route declares its access, and the placeholders it
// names are its pattern's. The first route that does not is an error (code internal, naming it).
Status check_route_access(const net::Router& router);

// One line per route, in the order added: "METHOD PATTERN ACCESS[ job={p}][ worker={p}] DISPATCH
// BODY" (the route-table listing test compares it; docs/architecture.md shows it).
std::string route_listing(const net::Router& router);

}  // namespace jobctl::daemon::http
