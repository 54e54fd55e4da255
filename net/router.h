// The route table's machinery: method + path pattern ("/v1/jobs/{id}/cancel") -> handler. A path
// that matches no pattern is 404; a path that matches with another method is 405 with an Allow
// header, answered after the gate of that path (so a caller without a valid token learns nothing
// about routes). A handler that throws answers 500. Everything answers JSON errors (docs/api.md).
//
// A request is served in two steps, so that the server can refuse it before reading its body:
// admit() when the headers have arrived (the gate: credentials, roles, limits), handle() once the
// body is there. Each route is declared whole (RouteSpec): the server reads its dispatch and body
// mode, and the gate its access, from the match, never from the path again.
//
// Thread safety: add() and the setters while building, before serving; the rest is then safe
// from any thread.
#pragma once

#include <any>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/message.h"

namespace jobctl::net {

// The {placeholders} of the matched pattern, in order.
using PathParams = std::vector<std::string>;
using Handler = std::function<void(const HttpRequest&, const PathParams&, Responder)>;

// Where the server runs a route's handler. `pool`: on the handler threads, for handlers that may
// block (a synchronous store write, a long computation). `io`: on the connection's I/O thread,
// for handlers that never block — they hand their work to the store asynchronously and answer
// from its completion — which saves the hand-off to a handler thread and back on the hottest
// routes (submits, heartbeats).
enum class Dispatch { pool, io };

// Where a route's request body goes: held in memory, or streamed to a file the handler receives
// as HttpRequest::body_file (uploads, never whole in memory).
struct RequestBody {
  enum class Kind { memory, file };
  Kind kind = Kind::memory;
  // The most bytes accepted, at most the server's limit for the kind
  // (ServerOptions::max_body_bytes, max_upload_bytes); 0: the server's. Past it: 413, from
  // Content-Length before a byte of the body is read, else as soon as the bytes read pass it.
  size_t max_bytes = 0;
  // The setting the 413 names as its field when max_bytes is the limit ("outputs.max_bytes_per_job";
  // "": "body").
  std::string limit_field;

  static RequestBody in_memory(size_t max_bytes = 0, std::string limit_field = "") {
    return {Kind::memory, max_bytes, std::move(limit_field)};
  }
  static RequestBody to_file(size_t max_bytes = 0, std::string limit_field = "") {
    return {Kind::file, max_bytes, std::move(limit_field)};
  }
};

// One route, everything about it declared in one place: what it matches, what runs it, where
// it runs, where its body goes, and who may call it.
struct RouteSpec {
  std::string method;
  std::string pattern;  // "/v1/jobs/{id}/cancel": {name} matches one path segment
  Handler handler;
  Dispatch dispatch = Dispatch::pool;
  RequestBody body;
  // Who may call it, in the terms of the gate that reads it (jobctld: http::RouteAccess,
  // daemon/http/route_access.h). Opaque to net/. Empty: undeclared, which jobctld's gate refuses
  // (and jobctld refuses to start with).
  std::any access;
};

// Runs before the handler of every matched route (auth, rate limits: daemon/http/auth_gate.h),
// with the matched route and its {placeholders}. It may attach what it learnt to the request
// (HttpRequest::context) and let it through (nullopt), or answer it itself (401, 403, 429, ...),
// in which case the handler is not called.
using Gate = std::function<std::optional<HttpResponse>(HttpRequest& request, const RouteSpec& route,
                                                       const PathParams& params)>;
// Told of every answer: the route pattern ("unmatched" for 404/405 paths), its status and the
// seconds from dispatch to answer (metrics: daemon/metrics/metrics.h). Called on the answering
// thread; must be quick and thread-safe.
using Observer = std::function<void(const std::string& method, const std::string& pattern, int status, double seconds)>;

class Router {
  struct Route;  // below

 public:
  void add(RouteSpec route);
  // A route with only a method, pattern and handler (the rest as RouteSpec's defaults).
  void add(std::string_view method, std::string_view pattern, Handler handler, Dispatch dispatch = Dispatch::pool);

  // Every route, in the order added (listings, start-up checks).
  std::vector<const RouteSpec*> routes() const;

  // The route a request's method and path match, found once: the server reads where to run it
  // (dispatch()) and where its body goes (body()), then hands it to handle(). Valid while the
  // Router lives; copyable.
  class Match {
   public:
    // How the matched route runs (pool when none matches: 404, 405 and static files).
    Dispatch dispatch() const;
    // Where the matched route's body goes (in memory, the server's limit, when none matches).
    RequestBody body() const;
    // A route matched method and path (else: 405, a static file or 404).
    bool matched() const { return route_ != nullptr; }

   private:
    friend class Router;
    const Route* route_ = nullptr;       // none: allow_ lists the methods the path has
    const Route* path_route_ = nullptr;  // with allow_: the first route of this path (its gate)
    PathParams params_;
    std::string allow_;
  };
  Match match(std::string_view method, std::string_view path) const;

  // Step one, with the headers only (the body is not read yet): runs the gate of the matched
  // route, or of the path's route followed by the 405 when only the method is wrong. Returns the
  // answer that ends the request (a refusal, the 405), or nullopt to go on; the gate may attach
  // the caller to the request. Runs on the calling thread; the gate may block.
  std::optional<HttpResponse> admit(HttpRequest& request, const Match& match) const;
  // Step two, with the body, for an admitted request: calls the matched route's handler (on the
  // calling thread), or answers a static file or 404; `respond` is called exactly once,
  // possibly later and from another thread.
  void handle(const HttpRequest& request, const Match& match, Responder respond) const;
  // Both steps at once (tests and fuzzers without a server).
  void handle(HttpRequest request, Responder respond) const {
    const Match m = match(request.method, request.path);
    if (auto answer = admit(request, m)) return respond(std::move(*answer));
    handle(request, m, std::move(respond));
  }
  // Set while building, before serving (like add()).
  void set_gate(Gate gate) { gate_ = std::move(gate); }
  void set_observer(Observer observer) { observer_ = std::move(observer); }
  // Called (without the gate) for a path that no route matches with any method, instead of the
  // 404: the dashboard's static files (daemon/http/static_files.h), which keep the 404 for /v1/.
  void set_fallback(Handler fallback) { fallback_ = std::move(fallback); }

 private:
  struct Route {
    RouteSpec spec;
    std::vector<std::string> segments;  // "{}" for a placeholder
  };
  std::vector<Route> routes_;
  Gate gate_;
  Observer observer_;
  Handler fallback_;
};

}  // namespace jobctl::net
