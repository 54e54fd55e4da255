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

HttpResponse method_not_allowed_answer(const HttpRequest& request, const std::string& allow) {
  HttpResponse res = error_response(make_error(
      ErrorCode::method_not_allowed, request.method + " is not allowed on " + request.path + " (allowed: " + allow + ")"));
  res.headers.emplace_back("Allow", allow);
  return res;
}

}  // namespace

void Router::add(RouteSpec spec) {
  Route r;
  for (auto& seg : split_path(spec.pattern))
    r.segments.push_back(seg.size() >= 2 && seg.front() == '{' && seg.back() == '}' ? "{}" : seg);
  r.spec = std::move(spec);
  routes_.push_back(std::move(r));
}

void Router::add(std::string_view method, std::string_view pattern, Handler handler, Dispatch dispatch) {
  RouteSpec spec;
  spec.method = std::string(method);
  spec.pattern = std::string(pattern);
  spec.handler = std::move(handler);
  spec.dispatch = dispatch;
  add(std::move(spec));
}

std::vector<const RouteSpec*> Router::routes() const {
  std::vector<const RouteSpec*> out;
  out.reserve(routes_.size());
  for (const Route& r : routes_) out.push_back(&r.spec);
  return out;
}

Dispatch Router::Match::dispatch() const { return route_ ? route_->spec.dispatch : Dispatch::pool; }

RequestBody Router::Match::body() const { return route_ ? route_->spec.body : RequestBody{}; }

Router::Match Router::match(std::string_view method, std::string_view path) const {
  Match m;
  const auto segments = split_path(path);
  PathParams params;
  for (const Route& r : routes_) {
    if (!match_segments(r.segments, segments, params)) continue;
    if (r.spec.method != method) {
      if (m.allow_.find(r.spec.method) == std::string::npos)
        m.allow_ += (m.allow_.empty() ? "" : ", ") + r.spec.method;
      if (m.path_route_ == nullptr) {
        m.path_route_ = &r;
        m.params_ = params;
      }
      continue;
    }
    m.route_ = &r;
    m.params_ = std::move(params);
    break;
  }
  if (m.route_ != nullptr) m.allow_.clear();
  return m;
}

std::optional<HttpResponse> Router::admit(HttpRequest& request, const Match& m) const {
  const Route* gated = m.route_ != nullptr ? m.route_ : m.path_route_;
  if (gated == nullptr) return std::nullopt;  // 404 or a static file: public
  const auto start = std::chrono::steady_clock::now();
  std::optional<HttpResponse> answer;
  try {
    if (gate_) answer = gate_(request, gated->spec, m.params_);
  } catch (const std::exception& e) {
    answer = error_response(make_error(ErrorCode::internal, std::string("internal error: ") + e.what()));
  }
  if (!answer && m.route_ == nullptr) answer = method_not_allowed_answer(request, m.allow_);
  if (answer && observer_)
    observer_(request.method, m.route_ != nullptr ? gated->spec.pattern : "unmatched", answer->status,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return answer;
}

void Router::handle(const HttpRequest& request, const Match& m, Responder respond) const {
  // The pattern the observer reports (metrics by route).
  std::string pattern = "unmatched";
  if (m.route_) pattern = m.route_->spec.pattern;
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
      r->spec.handler(request, m.params_, reply);
    } catch (const std::exception& e) {
      reply(error_response(make_error(ErrorCode::internal, std::string("internal error: ") + e.what())));
    }
    return;
  }
  if (!m.allow_.empty()) return reply(method_not_allowed_answer(request, m.allow_));  // admit() answers it first
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
