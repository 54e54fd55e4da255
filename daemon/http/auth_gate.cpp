#include "daemon/http/auth_gate.h"

#include <algorithm>
#include <cctype>

#include "daemon/jobs/lease_fence.h"
#include "net/json_body.h"

namespace jobctl::daemon::http {

namespace {

net::HttpResponse refuse(const Error& e) {
  net::HttpResponse r = net::error_response(e);
  if (e.code == ErrorCode::unauthenticated) r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"jobctld\"");
  return r;
}

// What a route needs once the options are applied (/metrics is public unless metrics.require_token).
Access effective(Access declared, const auth::SecurityOptions& o) {
  if (declared == Access::metrics) return o.metrics.require_token ? Access::admin : Access::anyone;
  return declared;
}

const char* roles_needed(Access need) {
  switch (need) {
    case Access::new_worker:
    case Access::worker: return "a worker or an admin token";
    case Access::checkpoint_reader: return "the job's owner, its lease holder or an admin";
    case Access::user: return "a user or an admin token";
    case Access::metrics:
    case Access::admin: return "an admin token";
    case Access::anyone:
    case Access::any_token: break;
  }
  return "a valid token";
}

bool role_admitted(Access need, auth::Role role) {
  if (role == auth::Role::admin) return true;
  switch (need) {
    case Access::anyone:
    case Access::any_token: return true;
    case Access::user: return role == auth::Role::user;
    case Access::new_worker:
    case Access::worker: return role == auth::Role::worker;
    case Access::checkpoint_reader: return role == auth::Role::user || role == auth::Role::worker;
    case Access::metrics:
    case Access::admin: return false;
  }
  return false;
}

// The int64 id in the route's {placeholder} `name`.
Expected<int64_t> id_param(const net::RouteSpec& route, const net::PathParams& params, const std::string& name,
                           std::string_view field) {
  const auto at = placeholder_index(route.pattern, name);
  if (!at || *at >= params.size())
    return make_error(ErrorCode::internal, "route " + route.pattern + " has no {" + name + "}");
  return net::parse_int_param(params[*at], field, 1, INT64_MAX);
}

// Auth on: the token, its role, its rate, and a user's access to the route's job.
std::optional<net::HttpResponse> check_token(const GateServices& s, const auth::SecurityOptions& options,
                                             const RouteAccess& access, Access need, net::HttpRequest& req,
                                             const net::RouteSpec& route, const net::PathParams& params,
                                             Caller& caller) {
  const std::string secret = bearer_token(req.header_or_empty("Authorization"));
  if (secret.empty())
    return refuse(make_error(ErrorCode::unauthenticated,
                             "an API token is required: send Authorization: Bearer <token> "
                             "(jobctl login, --token or JOBCTL_TOKEN)",
                             "Authorization"));
  auto who = s.tokens->authenticate(secret);
  if (!who) return refuse(who.error());
  const auth::Role role = who->role;
  if (!role_admitted(need, role))
    return refuse(make_error(ErrorCode::permission_denied, "a " + std::string(auth::to_string(role)) +
                                                               " token may not call " + req.method + " " +
                                                               route.pattern + " (it needs " + roles_needed(need) + ")"));
  const bool worker = role == auth::Role::worker;
  const double rate = worker ? options.limits.worker_requests_per_s : options.limits.requests_per_s;
  const double burst = worker ? std::max(1.0, rate * 2) : options.limits.burst;
  if (auto wait_ms = s.limiter->take(who->token_id, rate, burst)) {
    net::HttpResponse r = refuse(make_error(
        ErrorCode::rate_limited, "too many requests with this token (limit " + std::to_string(static_cast<int64_t>(rate)) +
                                     " per second); retry after " + std::to_string(*wait_ms) + " ms"));
    r.headers.emplace_back("Retry-After", std::to_string(std::max<int64_t>(1, (*wait_ms + 999) / 1000)));
    return r;
  }
  caller.token_id = who->token_id;
  caller.user = who->user;
  caller.role = role;
  caller.permissions = who->permissions;
  // A user's access to one job: only their own (others look as if they did not exist).
  if (role == auth::Role::user && !access.job_param.empty()) {
    auto id = id_param(route, params, access.job_param, "id");
    if (!id) return refuse(id.error());
    auto owner = s.store->job_owner(*id);
    if (!owner) return refuse(owner.error());
    if (!*owner || **owner != who->user)
      return refuse(make_error(ErrorCode::not_found, "job " + std::to_string(*id) + " does not exist"));
  }
  return std::nullopt;
}

// The worker a call names where its headers name it: the route's worker placeholder, else the
// worker_id query parameter.
std::optional<int64_t> named_worker(const net::HttpRequest& req, const RouteAccess& access,
                                    const net::RouteSpec& route, const net::PathParams& params) {
  std::optional<std::string> text;
  if (!access.worker_param.empty()) {
    const auto at = placeholder_index(route.pattern, access.worker_param);
    if (at && *at < params.size()) text = params[*at];
  } else {
    text = req.query_param("worker_id");
  }
  if (!text) return std::nullopt;
  auto id = net::parse_int_param(*text, "worker_id", 1, INT64_MAX);
  if (!id) return std::nullopt;  // malformed: the handler names the field
  return *id;
}

// A worker reads a job's checkpoints only while it holds the job's lease (as any node of a gang:
// every node resumes from the same checkpoint).
std::optional<net::HttpResponse> check_lease_holder(const GateServices& s, const RouteAccess& access,
                                                    const net::RouteSpec& route, const net::PathParams& params,
                                                    int64_t worker_id) {
  auto job_id = id_param(route, params, access.job_param.empty() ? "id" : access.job_param, "id");
  if (!job_id) return refuse(job_id.error());
  auto job = s.store->get_job(*job_id);
  if (!job) return refuse(job.error());
  if (!*job) return refuse(make_error(ErrorCode::not_found, "job " + std::to_string(*job_id) + " does not exist"));
  const bool leased = (*job)->state == store::JobState::placed || (*job)->state == store::JobState::running;
  bool holds = leased && (*job)->worker_id == worker_id;
  if (leased && !holds && (*job)->resource_nodes > 1) {
    auto nodes = s.store->gang_members(*job_id);
    if (!nodes) return refuse(nodes.error());
    holds = jobs::gang_node_of(*nodes, jobs::LeaseRef{worker_id, (*job)->lease_epoch}).has_value();
  }
  if (!holds)
    return refuse(make_error(ErrorCode::permission_denied,
                             "worker " + std::to_string(worker_id) + " does not hold the lease of job " +
                                 std::to_string(*job_id) +
                                 "; a job's checkpoints are readable by its lease holder, its owner and admins",
                             "X-Worker-Secret"));
  return std::nullopt;
}

}  // namespace

std::string bearer_token(std::string_view h) {
  while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
  if (h.size() < 7) return {};
  std::string scheme(h.substr(0, 7));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (scheme != "bearer ") return {};
  h.remove_prefix(7);
  while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
  while (!h.empty() && h.back() == ' ') h.remove_suffix(1);
  return std::string(h);
}

net::Gate make_request_gate(GateServices services, auth::SecurityOptions options) {
  return [services, options](net::HttpRequest& req, const net::RouteSpec& route,
                             const net::PathParams& params) -> std::optional<net::HttpResponse> {
    const RouteAccess* access = access_of(route);
    if (access == nullptr)  // deny by default (check_route_access refuses such a table at start-up)
      return refuse(make_error(ErrorCode::permission_denied,
                               req.method + " " + route.pattern + " declares no access; nobody may call it"));
    const Access need = effective(access->who, options);
    if (need == Access::anyone) return std::nullopt;
    Caller caller;
    const bool auth_on = services.tokens != nullptr;
    if (auth_on)
      if (auto refused = check_token(services, options, *access, need, req, route, params, caller)) return refused;
    const bool worker_call = need == Access::worker;
    const bool worker_reads = need == Access::checkpoint_reader && caller.role == auth::Role::worker;
    if (worker_call || worker_reads) {
      auto id = services.workers->authenticate(req.header_or_empty("X-Worker-Secret"));
      if (!id) return refuse(id.error());
      caller.worker_id = *id;
      if (worker_reads) {
        if (auto refused = check_lease_holder(services, *access, route, params, *id)) return refused;
      } else if (auto named = named_worker(req, *access, route, params); named && *named != *id) {
        return refuse(make_error(ErrorCode::permission_denied,
                                 "the worker secret is worker " + std::to_string(*id) +
                                     "'s; it may not act for worker " + std::to_string(*named),
                                 "worker_id"));
      }
    }
    req.context = std::move(caller);
    return std::nullopt;
  };
}

bool may_use_reserved_connection(const net::HttpRequest& request) {
  if (caller_of(request).identified()) return true;
  return request.method == "GET" && request.path == "/healthz";
}

Status check_acting_worker(const net::HttpRequest& request, int64_t claimed_worker_id) {
  const int64_t worker_id = caller_of(request).worker_id;
  if (worker_id != 0 && worker_id == claimed_worker_id) return {};
  return make_error(ErrorCode::permission_denied,
                    worker_id == 0 ? std::string("the call carries no verified worker secret (X-Worker-Secret)")
                                   : "the worker secret is worker " + std::to_string(worker_id) +
                                         "'s; it may not act for worker " + std::to_string(claimed_worker_id),
                    "worker_id");
}

}  // namespace jobctl::daemon::http
