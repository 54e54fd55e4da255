#include "daemon/http/auth_gate.h"

#include <algorithm>
#include <cctype>

#include "net/json_body.h"

namespace jobctl::daemon::http {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// The worker protocol: calls a worker makes about its own work (a worker or admin token with
// auth on, and the worker's secret but for register).
bool is_worker_route(std::string_view method, std::string_view pattern) {
  if (method == "PUT") return pattern == "/v1/jobs/{id}/checkpoints/{step}";
  if (method != "POST") return false;
  return pattern == "/v1/workers/register" || pattern == "/v1/workers/{id}/lease" ||
         pattern == "/v1/jobs/{id}/heartbeat" || pattern == "/v1/jobs/{id}/complete" ||
         pattern == "/v1/jobs/{id}/fail" || pattern == "/v1/jobs/{id}/preempt" ||
         pattern == "/v1/jobs/{id}/checkpoints/{step}/reject";
}

bool is_checkpoint_read(std::string_view method, std::string_view pattern) {
  return method == "GET" && (pattern == "/v1/jobs/{id}/checkpoints" || pattern == "/v1/jobs/{id}/checkpoints/{step}");
}

net::HttpResponse refuse(const Error& e) {
  net::HttpResponse r = net::error_response(e);
  if (e.code == ErrorCode::unauthenticated) r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"jobctld\"");
  return r;
}

}  // namespace

Access access_for(std::string_view method, std::string_view pattern, const auth::SecurityOptions& o) {
  if (pattern == "/metrics") return o.metrics.require_token ? Access::admin : Access::anyone;
  if (!starts_with(pattern, "/v1/")) return Access::anyone;  // /healthz, the dashboard's files
  if (pattern == "/v1/auth/whoami") return Access::any_token;
  // A code bundle is read by the worker that runs its job: any token (bundles are named by their
  // SHA-256, which only the specs naming them show).
  if (method == "GET" && pattern == "/v1/bundles/{sha256}") return Access::any_token;
  if (starts_with(pattern, "/v1/tokens")) return Access::admin;
  if (is_checkpoint_read(method, pattern)) return Access::checkpoint_reader;
  if (is_worker_route(method, pattern)) return Access::worker;
  return Access::user;
}

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

namespace {

const char* roles_needed(Access need) {
  switch (need) {
    case Access::worker: return "a worker or an admin token";
    case Access::checkpoint_reader: return "the job's owner, its lease holder or an admin";
    case Access::user: return "a user or an admin token";
    case Access::admin: return "an admin token";
    case Access::anyone:
    case Access::any_token: break;
  }
  return "a valid token";
}

// Auth on: the token, its role, its rate, and a user's access to the job in the path.
std::optional<net::HttpResponse> check_token(const GateServices& s, const auth::SecurityOptions& options, Access need,
                                             net::HttpRequest& req, const std::string& pattern,
                                             const net::PathParams& params) {
  const std::string secret = bearer_token(req.authorization);
  if (secret.empty())
    return refuse(make_error(ErrorCode::unauthenticated,
                             "an API token is required: send Authorization: Bearer <token> "
                             "(jobctl login, --token or JOBCTL_TOKEN)",
                             "Authorization"));
  auto who = s.tokens->authenticate(secret);
  if (!who) return refuse(who.error());
  const std::string role(store::to_string(who->role));
  const bool allowed = role == "admin" || need == Access::any_token ||
                       (need == Access::worker && role == "worker") || (need == Access::user && role == "user") ||
                       (need == Access::checkpoint_reader && (role == "user" || role == "worker"));
  if (!allowed)
    return refuse(make_error(ErrorCode::permission_denied, "a " + role + " token may not call " + req.method + " " +
                                                               pattern + " (it needs " + roles_needed(need) + ")"));
  const double rate = role == "worker" ? options.limits.worker_requests_per_s : options.limits.requests_per_s;
  const double burst = role == "worker" ? std::max(1.0, rate * 2) : options.limits.burst;
  if (auto wait_ms = s.limiter->take(who->token_id, rate, burst)) {
    net::HttpResponse r = refuse(make_error(
        ErrorCode::rate_limited, "too many requests with this token (limit " + std::to_string(static_cast<int64_t>(rate)) +
                                     " per second); retry after " + std::to_string(*wait_ms) + " ms"));
    r.headers.emplace_back("Retry-After", std::to_string(std::max<int64_t>(1, (*wait_ms + 999) / 1000)));
    return r;
  }
  req.user = who->user;
  req.role = role;
  req.permissions = who->permissions;
  // A user's access to one job: only their own (others look as if they did not exist).
  if (role == "user" && starts_with(pattern, "/v1/jobs/{id}")) {
    auto id = net::parse_int_param(params.at(0), "id", 1, INT64_MAX);
    if (!id) return refuse(id.error());
    auto owner = s.store->job_owner(*id);
    if (!owner) return refuse(owner.error());
    if (!*owner || **owner != who->user)
      return refuse(make_error(ErrorCode::not_found, "job " + std::to_string(*id) + " does not exist"));
  }
  return std::nullopt;
}

// The worker a call names where its headers name it: the lease's path, an upload's query.
std::optional<int64_t> named_worker(const net::HttpRequest& req, const std::string& pattern,
                                    const net::PathParams& params) {
  std::optional<std::string> text;
  if (pattern == "/v1/workers/{id}/lease") text = params.at(0);
  else text = req.query_param("worker_id");
  if (!text) return std::nullopt;
  auto id = net::parse_int_param(*text, "worker_id", 1, INT64_MAX);
  if (!id) return std::nullopt;  // malformed: the handler names the field
  return *id;
}

// A worker reads a job's checkpoints only while it holds the job's lease.
std::optional<net::HttpResponse> check_lease_holder(const GateServices& s, const net::HttpRequest& req,
                                                    const net::PathParams& params) {
  auto job_id = net::parse_int_param(params.at(0), "id", 1, INT64_MAX);
  if (!job_id) return refuse(job_id.error());
  auto job = s.store->get_job(*job_id);
  if (!job) return refuse(job.error());
  if (!*job) return refuse(make_error(ErrorCode::not_found, "job " + std::to_string(*job_id) + " does not exist"));
  const bool leased = (*job)->state == store::JobState::placed || (*job)->state == store::JobState::running;
  if (!leased || (*job)->worker_id != req.worker_id)
    return refuse(make_error(ErrorCode::permission_denied,
                             "worker " + std::to_string(req.worker_id) + " does not hold the lease of job " +
                                 std::to_string(*job_id) +
                                 "; a job's checkpoints are readable by its lease holder, its owner and admins",
                             "X-Worker-Secret"));
  return std::nullopt;
}

}  // namespace

net::Gate make_request_gate(GateServices services, auth::SecurityOptions options) {
  return [services, options](net::HttpRequest& req, const std::string& pattern,
                             const net::PathParams& params) -> std::optional<net::HttpResponse> {
    const Access need = access_for(req.method, pattern, options);
    if (need == Access::anyone) return std::nullopt;
    const bool auth_on = services.tokens != nullptr;
    if (auth_on)
      if (auto refused = check_token(services, options, need, req, pattern, params)) return refused;
    const bool worker_call = need == Access::worker && pattern != "/v1/workers/register";
    const bool worker_reads = need == Access::checkpoint_reader && auth_on && req.role == "worker";
    if (!worker_call && !worker_reads) return std::nullopt;
    auto id = services.workers->authenticate(req.worker_secret);
    if (!id) return refuse(id.error());
    req.worker_id = *id;
    if (worker_reads) return check_lease_holder(services, req, params);
    if (auto named = named_worker(req, pattern, params); named && *named != *id)
      return refuse(make_error(ErrorCode::permission_denied,
                               "the worker secret is worker " + std::to_string(*id) + "'s; it may not act for worker " +
                                   std::to_string(*named),
                               "worker_id"));
    return std::nullopt;
  };
}

bool may_use_reserved_connection(const net::HttpRequest& request) {
  if (!request.role.empty() || request.worker_id != 0) return true;
  return request.method == "GET" && request.path == "/healthz";
}

Status check_acting_worker(const net::HttpRequest& request, int64_t claimed_worker_id) {
  if (request.worker_id != 0 && request.worker_id == claimed_worker_id) return {};
  return make_error(ErrorCode::permission_denied,
                    request.worker_id == 0
                        ? std::string("the call carries no verified worker secret (X-Worker-Secret)")
                        : "the worker secret is worker " + std::to_string(request.worker_id) +
                              "'s; it may not act for worker " + std::to_string(claimed_worker_id),
                    "worker_id");
}

}  // namespace jobctl::daemon::http
