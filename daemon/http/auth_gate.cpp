#include "daemon/http/auth_gate.h"

#include <algorithm>
#include <cctype>

#include "net/json_body.h"

namespace jobctl::daemon::http {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool is_worker_route(std::string_view method, std::string_view pattern) {
  if (method != "POST" && pattern.find("checkpoint") == std::string_view::npos) return false;
  return pattern == "/v1/workers/register" || pattern == "/v1/workers/{id}/lease" ||
         pattern == "/v1/jobs/{id}/heartbeat" || pattern == "/v1/jobs/{id}/complete" ||
         pattern == "/v1/jobs/{id}/fail" || pattern == "/v1/jobs/{id}/preempt" ||
         pattern.find("checkpoint") != std::string_view::npos;
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
  if (starts_with(pattern, "/v1/tokens")) return Access::admin;
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

net::Gate make_auth_gate(auth::TokenService& tokens, auth::RateLimiter& limiter, store::Store& store,
                    auth::SecurityOptions options) {
  return [&tokens, &limiter, &store, options](net::HttpRequest& req, const std::string& pattern, const net::PathParams& params)
             -> std::optional<net::HttpResponse> {
    const Access need = access_for(req.method, pattern, options);
    if (need == Access::anyone) return std::nullopt;
    const std::string secret = bearer_token(req.authorization);
    if (secret.empty())
      return refuse(make_error(ErrorCode::unauthenticated,
                               "an API token is required: send Authorization: Bearer <token> "
                               "(jobctl login, --token or JOBCTL_TOKEN)",
                               "Authorization"));
    auto who = tokens.authenticate(secret);
    if (!who) return refuse(who.error());
    const std::string& role = who->role;
    const bool allowed = role == "admin" || need == Access::any_token ||
                         (need == Access::worker && role == "worker") ||
                         (need == Access::user && role == "user");
    if (!allowed)
      return refuse(make_error(ErrorCode::permission_denied,
                               "a " + role + " token may not call " + req.method + " " + pattern +
                                   " (it needs a " +
                                   (need == Access::worker ? "worker" : need == Access::user ? "user" : "admin") +
                                   " or admin token)"));
    const double rate = role == "worker" ? options.limits.worker_requests_per_s : options.limits.requests_per_s;
    const double burst = role == "worker" ? std::max(1.0, rate * 2) : options.limits.burst;
    if (auto wait_ms = limiter.take(who->token_id, rate, burst)) {
      net::HttpResponse r = refuse(make_error(
          ErrorCode::rate_limited, "too many requests with this token (limit " + std::to_string(static_cast<int64_t>(rate)) +
                              " per second); retry after " + std::to_string(*wait_ms) + " ms"));
      r.headers.emplace_back("Retry-After", std::to_string(std::max<int64_t>(1, (*wait_ms + 999) / 1000)));
      return r;
    }
    req.user = who->user;
    req.role = role;
    // A user's access to one job: only their own (others look as if they did not exist).
    if (role == "user" && starts_with(pattern, "/v1/jobs/{id}")) {
      auto id = net::parse_int_param(params.at(0), "id", 1, INT64_MAX);
      if (!id) return refuse(id.error());
      auto owner = store.job_owner(*id);
      if (!owner) return refuse(owner.error());
      if (!*owner || **owner != who->user)
        return refuse(make_error(ErrorCode::not_found, "job " + std::to_string(*id) + " does not exist"));
    }
    return std::nullopt;
  };
}

}  // namespace jobctl::daemon::http
