#include "daemon/http/auth_routes.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "daemon/http/caller.h"
#include "daemon/http/route_access.h"
#include "net/json_body.h"

namespace jobctl::daemon::http {

using nlohmann::json;

namespace {

json token_json(const store::TokenRow& t) {
  return json{{"id", t.id},
              {"user", t.user},
              {"role", std::string(store::to_string(t.role))},
              {"permissions", t.permissions.empty() ? json::array() : json::array({t.permissions})},
              {"prefix", t.prefix},
              {"created_ms", t.created_ms},
              {"revoked_ms", t.revoked_ms ? json(*t.revoked_ms) : json(nullptr)}};
}

Error auth_off() {
  return make_error(ErrorCode::permission_denied,
                    "auth is disabled (auth.enabled is false): tokens are created with "
                    "`jobctld --create-token USER --role ROLE --data-dir DIR` and used once auth is on");
}

}  // namespace

void add_auth_routes(net::Router& router, auth::TokenService& tokens, bool enabled) {
  const RouteAccess admin{Access::admin};
  router.add(route("POST", "/v1/tokens", admin, [&tokens, enabled](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
    if (!enabled) return respond(net::error_response(auth_off()));
    auto body = net::json_object_body(req, true);
    if (!body) return respond(net::error_response(body.error()));
    if (auto st = net::only_keys(*body, {"user", "role", "permissions"}); !st) return respond(net::error_response(st.error()));
    std::vector<std::string> permissions;
    if (auto it = body->find("permissions"); it != body->end()) {
      bool ok = it->is_array();
      if (ok)
        for (const auto& p : *it) ok = ok && p.is_string();
      if (!ok)
        return respond(net::error_response(make_error(ErrorCode::invalid_argument,
                                                      "permissions must be an array of strings, e.g. [\"commands\"]",
                                                      "permissions")));
      for (const auto& p : *it) permissions.push_back(p.get<std::string>());
    }
    auto user = net::string_field(*body, "user", 100);
    if (!user) return respond(net::error_response(user.error()));
    if (auto st = auth::TokenService::check_user(*user, "user"); !st) return respond(net::error_response(st.error()));
    auto role = net::string_field(*body, "role", 20, std::string("user"));
    if (!role) return respond(net::error_response(role.error()));
    if (!auth::TokenService::valid_role(*role))
      return respond(net::error_response(make_error(ErrorCode::invalid_argument, "role must be admin, user or worker", "role")));
    auto made = tokens.create(*user, *role, permissions);
    if (!made) return respond(net::error_response(made.error()));
    json out = token_json(made->row);
    out["token"] = made->secret;
    net::HttpResponse res = net::json_response(201, out);
    res.headers.emplace_back("Location", "/v1/tokens/" + std::to_string(made->row.id));
    respond(std::move(res));
  }));
  router.add(route("GET", "/v1/tokens", admin, [&tokens, enabled](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
    if (!enabled) return respond(net::error_response(auth_off()));
    if (!req.query.empty())
      return respond(net::error_response(net::unknown_query_parameter(req.query[0].first)));
    auto list = tokens.list();
    if (!list) return respond(net::error_response(list.error()));
    json out = json::array();
    for (const auto& t : *list) out.push_back(token_json(t));
    respond(net::json_response(200, json{{"tokens", std::move(out)}}));
  }));
  router.add(route("POST", "/v1/tokens/{id}/revoke", admin, [&tokens, enabled](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) {
    if (!enabled) return respond(net::error_response(auth_off()));
    auto id = net::parse_int_param(p.at(0), "id", 1, std::numeric_limits<int64_t>::max());
    if (!id) return respond(net::error_response(id.error()));
    auto body = net::json_object_body(req, false);
    if (!body) return respond(net::error_response(body.error()));
    if (auto st = net::only_keys(*body, {}); !st) return respond(net::error_response(st.error()));
    auto row = tokens.revoke(*id);
    if (!row) return respond(net::error_response(row.error()));
    respond(net::json_response(200, token_json(*row)));
  }));
  router.add(route("GET", "/v1/auth/whoami", {Access::any_token}, [enabled](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
    const Caller& caller = caller_of(req);
    respond(net::json_response(200, json{{"auth", enabled},
                                    {"user", caller.user.empty() ? json(nullptr) : json(caller.user)},
                                    {"role", caller.role ? json(auth::to_string(*caller.role)) : json(nullptr)}}));
  }));
}

void add_metrics_route(net::Router& router, const metrics::Metrics& metrics) {
  router.add(route("GET", "/metrics", {Access::metrics}, [&metrics](const net::HttpRequest&, const net::PathParams&, net::Responder respond) {
    net::HttpResponse r;
    r.status = 200;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = metrics.render();
    respond(std::move(r));
  }));
}

}  // namespace jobctl::daemon::http
