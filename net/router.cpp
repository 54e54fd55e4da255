#include "net/router.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>

#include "net/json_body.h"

namespace jobctl::net {

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

bool match_segments(const std::vector<std::string>& pattern, const std::vector<std::string>& path,
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

Dispatch Router::Match::dispatch() const { return route_ ? route_->dispatch : Dispatch::pool; }

Router::Match Router::match(std::string_view method, std::string_view path) const {
  Match m;
  const auto segments = split_path(path);
  PathParams params;
  for (const Route& r : routes_) {
    if (!match_segments(r.segments, segments, params)) continue;
    if (r.method != method) {
      if (m.allow_.find(r.method) == std::string::npos) m.allow_ += (m.allow_.empty() ? "" : ", ") + r.method;
      continue;
    }
    m.route_ = &r;
    m.params_ = std::move(params);
    break;
  }
  return m;
}

void Router::handle(const HttpRequest& request, const Match& m, Responder respond) const {
  // The pattern the observer reports (metrics by route).
  std::string pattern = "unmatched";
  if (m.route_) pattern = m.route_->pattern;
  else if (m.allow_.empty() && fallback_) pattern = "static";
  // Whatever a handler does, the connection gets exactly one answer.
  auto once = std::make_shared<std::atomic<bool>>(false);
  Responder reply = [once, respond = std::move(respond), observer = observer_, pattern = std::move(pattern),
                     method = request.method, start = std::chrono::steady_clock::now()](HttpResponse r) {
    if (once->exchange(true)) return;
    if (observer)
      observer(method, pattern, r.status,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    respond(std::move(r));
  };
  if (const Route* r = m.route_) {
    try {
      if (gate_) {  // auth and limits (auth_gate.h) see a copy they may annotate
        HttpRequest gated = request;
        if (auto refused = gate_(gated, r->pattern, m.params_)) return reply(std::move(*refused));
        r->handler(gated, m.params_, reply);
        return;
      }
      r->handler(request, m.params_, reply);
    } catch (const std::exception& e) {
      reply(error_response(make_error(ErrorCode::internal, std::string("internal error: ") + e.what())));
    }
    return;
  }
  if (!m.allow_.empty()) {
    HttpResponse res = error_response(make_error(
        ErrorCode::method_not_allowed, request.method + " is not allowed on " + request.path + " (allowed: " + m.allow_ + ")"));
    res.headers.emplace_back("Allow", m.allow_);
    reply(std::move(res));
    return;
  }
  if (fallback_) {  // static files (the dashboard): public, so not gated
    try {
      fallback_(request, {}, reply);
    } catch (const std::exception& e) {
      reply(error_response(make_error(ErrorCode::internal, std::string("internal error: ") + e.what())));
    }
    return;
  }
  reply(error_response(make_error(ErrorCode::not_found, "no such endpoint: " + request.path)));
}

}  // namespace jobctl::net
