#include "daemon/http/openapi_route.h"

#include <string>

#include "daemon/http/route_access.h"

namespace jobctl::daemon::http {

namespace detail {
extern const std::string_view kOpenApiJson;  // generated from docs/openapi.json
}  // namespace detail

std::string_view openapi_document() { return detail::kOpenApiJson; }

void add_openapi_route(net::Router& router) {
  router.add(route("GET", "/v1/openapi.json", Access::anyone,
                   [](const net::HttpRequest&, const net::PathParams&, net::Responder respond) {
                     net::HttpResponse answer;
                     answer.body = std::string(openapi_document());
                     respond(std::move(answer));
                   }));
}

}  // namespace jobctl::daemon::http
