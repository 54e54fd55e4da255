// The route table's machinery: method + path pattern ("/v1/jobs/{id}/cancel") -> handler. A path
// that matches no pattern is 404; a path that matches with another method is 405 with an Allow
// header. A handler that throws answers 500. Everything answers JSON errors (docs/api.md).
//
// Thread safety: add() while building, before serving; handle() is then safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "daemon/http/message.h"

namespace jobctl::daemon::http {

// The {placeholders} of the matched pattern, in order.
using PathParams = std::vector<std::string>;
using Handler = std::function<void(const HttpRequest&, const PathParams&, Responder)>;

class Router {
 public:
  void add(std::string_view method, std::string_view pattern, Handler handler);
  // Finds the route and calls its handler (on the calling thread); `respond` is called exactly
  // once, possibly later and from another thread.
  void handle(const HttpRequest& request, Responder respond) const;

 private:
  struct Route {
    std::string method;
    std::vector<std::string> segments;  // "{}" for a placeholder
    std::string pattern;
    Handler handler;
  };
  std::vector<Route> routes_;
};

}  // namespace jobctl::daemon::http
