#include "daemon/http/route_access.h"

namespace jobctl::daemon::http {

std::string_view to_string(Access access) {
  switch (access) {
    case Access::anyone: return "anyone";
    case Access::any_token: return "any_token";
    case Access::user: return "user";
    case Access::admin: return "admin";
    case Access::metrics: return "metrics";
    case Access::new_worker: return "new_worker";
    case Access::worker: return "worker";
    case Access::checkpoint_reader: return "checkpoint_reader";
  }
  return "admin";
}

net::RouteSpec route(std::string method, std::string pattern, RouteAccess access, net::Handler handler,
                     net::Dispatch dispatch, net::RequestBody body) {
  return net::RouteSpec{std::move(method), std::move(pattern), std::move(handler), dispatch, body, std::move(access)};
}

const RouteAccess* access_of(const net::RouteSpec& route) { return std::any_cast<RouteAccess>(&route.access); }

std::optional<size_t> placeholder_index(std::string_view pattern, std::string_view name) {
  size_t index = 0;
  for (size_t open = pattern.find('{'); open != std::string_view::npos; open = pattern.find('{', open + 1)) {
    const size_t close = pattern.find('}', open);
    if (close == std::string_view::npos) break;
    if (pattern.substr(open + 1, close - open - 1) == name) return index;
    ++index;
  }
  return std::nullopt;
}

Status check_route_access(const net::Router& router) {
  for (const net::RouteSpec* r : router.routes()) {
    const std::string route = r->method + " " + r->pattern;
    const RouteAccess* access = access_of(*r);
    if (access == nullptr)
      return make_error(ErrorCode::internal,
                        "route " + route + " declares no access (who may call it); jobctld refuses to start", route);
    for (const std::string* param : {&access->job_param, &access->worker_param})
      if (!param->empty() && !placeholder_index(r->pattern, *param))
        return make_error(ErrorCode::internal, "route " + route + " names {" + *param + "}, which its pattern lacks",
                          route);
  }
  return {};
}

std::string route_listing(const net::Router& router) {
  std::string out;
  for (const net::RouteSpec* r : router.routes()) {
    out += r->method + " " + r->pattern + " ";
    const RouteAccess* access = access_of(*r);
    out += access != nullptr ? std::string(to_string(access->who)) : std::string("UNDECLARED");
    if (access != nullptr && !access->job_param.empty()) out += " job={" + access->job_param + "}";
    if (access != nullptr && !access->worker_param.empty()) out += " worker={" + access->worker_param + "}";
    out += r->dispatch == net::Dispatch::io ? " io" : " pool";
    out += r->body.kind == net::RequestBody::Kind::file ? " file" : " memory";
    if (r->body.max_bytes > 0) out += "<=" + std::to_string(r->body.max_bytes);
    out += "\n";
  }
  return out;
}

}  // namespace jobctl::daemon::http
