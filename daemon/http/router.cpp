#include "daemon/http/router.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>

#include "daemon/http/json_body.h"

namespace jobctl::daemon::http {

namespace {

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') { ++i; continue; }
    const size_t j = path.find('/', i);
    out.emplace_back(path.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
    if (j == std::string_view::npos) break;
    i = j;
  }
  return out;
}

bool match(const std::vector<std::string>& pattern, const std::vector<std::string>& path,
           PathParams& params) {
  if (pattern.size() != path.size()) return false;
  params.clear();
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == "{}") {
      params.push_back(path[i]);
    } else if (pattern[i] != path[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

void Router::add(std::string_view method, std::string_view pattern, Handler handler, Dispatch dispatch) {
  Route r;
  r.dispatch = dispatch;
  r.method = std::string(method);
  r.pattern = std::string(pattern);
  for (auto& seg : split_path(pattern))
    r.segments.push_back(seg.size() >= 2 && seg.front() == '{' && seg.back() == '}' ? "{}" : seg);
  r.handler = std::move(handler);
  routes_.push_back(std::move(r));
}

Dispatch Router::dispatch_for(std::string_view method, std::string_view path) const {
  const auto segments = split_path(path);
  PathParams params;
  for (const Route& r : routes_)
    if (r.method == method && match(r.segments, segments, params)) return r.dispatch;
  return Dispatch::pool;
}

void Router::handle(const HttpRequest& request, Responder respond) const {
  // Whatever a handler does, the connection gets exactly one answer.
  auto once = std::make_shared<std::atomic<bool>>(false);
  const auto path = split_path(request.path);
  // The route's pattern, for the observer (metrics by route): found before answering.
  auto pattern = std::make_shared<std::string>("unmatched");
  Responder reply = [once, respond = std::move(respond), observer = observer_, pattern,
                     method = request.method, start = std::chrono::steady_clock::now()](HttpResponse r) {
    if (once->exchange(true)) return;
    if (observer)
      observer(method, *pattern, r.status,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    respond(std::move(r));
  };
  std::string allow;
  PathParams params;
  for (const Route& r : routes_) {
    if (!match(r.segments, path, params)) continue;
    if (r.method != request.method) {
      if (allow.find(r.method) == std::string::npos) allow += (allow.empty() ? "" : ", ") + r.method;
      continue;
    }
    *pattern = r.pattern;
    try {
      if (gate_) {  // auth and limits (auth_gate.h) see a copy they may annotate
        HttpRequest gated = request;
        if (auto refused = gate_(gated, r.pattern)) return reply(std::move(*refused));
        r.handler(gated, params, reply);
        return;
      }
      r.handler(request, params, reply);
    } catch (const std::exception& e) {
      reply(error_response(make_error("internal", std::string("internal error: ") + e.what())));
    }
    return;
  }
  if (!allow.empty()) {
    HttpResponse res = error_response(make_error(
        "method_not_allowed", request.method + " is not allowed on " + request.path + " (allowed: " + allow + ")"));
    res.headers.emplace_back("Allow", allow);
    reply(std::move(res));
    return;
  }
  if (fallback_) {  // static files (the dashboard): public, so not gated
    *pattern = "static";
    try {
      fallback_(request, {}, reply);
    } catch (const std::exception& e) {
      reply(error_response(make_error("internal", std::string("internal error: ") + e.what())));
    }
    return;
  }
  reply(error_response(make_error("not_found", "no such endpoint: " + request.path)));
}

}  // namespace jobctl::daemon::http
