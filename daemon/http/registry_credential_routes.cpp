#include "daemon/http/registry_credential_routes.h"

#include <string>

#include <nlohmann/json.hpp>

#include "daemon/http/caller.h"
#include "daemon/http/route_access.h"
#include "net/json_body.h"

namespace jobctl::daemon::http {

using nlohmann::json;

namespace {

// A login's body: the username and a password of at most 8 kB, with room for JSON's escapes.
constexpr size_t kMaxBodyBytes = 32 * 1024;

json login_json(const auth::RegistryLogin& l) {
  return json{{"registry", l.registry}, {"username", l.username}, {"updated_ms", l.updated_ms}};
}

}  // namespace

void add_registry_credential_routes(net::Router& router, auth::RegistryCredentials& credentials) {
  const RouteAccess user{Access::user};
  router.add(route("PUT", "/v1/registry-credentials/{registry}", user,
                   [&credentials](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) {
                     if (auto st = net::only_query_keys(req, {}); !st) return respond(net::error_response(st.error()));
                     auto body = net::json_object_body(req, true);
                     if (!body) return respond(net::error_response(body.error()));
                     if (auto st = net::only_keys(*body, {"username", "password"}); !st)
                       return respond(net::error_response(st.error()));
                     auto username = net::string_field(*body, "username", auth::RegistryCredentials::kMaxUsernameBytes);
                     if (!username) return respond(net::error_response(username.error()));
                     auto password = net::string_field(*body, "password", auth::RegistryCredentials::kMaxPasswordBytes);
                     if (!password) return respond(net::error_response(password.error()));
                     const std::string& who = caller_of(req).user;
                     if (auto st = credentials.put(who, p.at(0), *username, *password); !st)
                       return respond(net::error_response(st.error()));
                     respond(net::json_response(200, json{{"registry", p.at(0)}, {"username", *username}}));
                   },
                   net::Dispatch::pool, net::RequestBody::in_memory(kMaxBodyBytes)));
  router.add(route("GET", "/v1/registry-credentials", user,
                   [&credentials](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
                     if (auto st = net::only_query_keys(req, {}); !st) return respond(net::error_response(st.error()));
                     auto list = credentials.list(caller_of(req).user);
                     if (!list) return respond(net::error_response(list.error()));
                     json out = json::array();
                     for (const auto& l : *list) out.push_back(login_json(l));
                     respond(net::json_response(200, json{{"registry_credentials", std::move(out)}}));
                   }));
  router.add(route("DELETE", "/v1/registry-credentials/{registry}", user,
                   [&credentials](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) {
                     if (auto st = net::only_query_keys(req, {}); !st) return respond(net::error_response(st.error()));
                     auto body = net::json_object_body(req, false);
                     if (!body) return respond(net::error_response(body.error()));
                     if (auto st = net::only_keys(*body, {}); !st) return respond(net::error_response(st.error()));
                     if (auto st = credentials.remove(caller_of(req).user, p.at(0)); !st)
                       return respond(net::error_response(st.error()));
                     respond(net::json_response(200, json{{"deleted", p.at(0)}}));
                   }));
}

}  // namespace jobctl::daemon::http
