// HTTP requests and responses as plain values, so that routing, handlers and their tests never
// see Boost.Beast: only server.cpp converts between these and Beast's types.
//
// Thread safety: plain values. A Responder is called exactly once, from any thread.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/expected.h"

namespace jobctl::net {

struct HttpRequest {
  std::string method;          // "GET", "POST", ...
  std::string target;          // as received: path and query
  std::string path;            // without the query, percent-decoded
  std::vector<std::pair<std::string, std::string>> query;  // decoded, in order
  std::string content_type;    // the Content-Type header, as sent
  std::string authorization;   // the Authorization header (reserved for API tokens)
  std::string idempotency_key; // the Idempotency-Key header (POST /v1/jobs retries)
  std::string if_none_match;   // the If-None-Match header (static files: 304)
  std::string body;
  // Set by the auth gate (daemon/http/auth_gate.h) when auth is enabled; empty otherwise.
  std::string user;            // the token's user
  std::string role;            // admin | user | worker

  // The last value of a query parameter, if present.
  std::optional<std::string> query_param(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Allow, Location)
};

using Responder = std::function<void(HttpResponse)>;

// Splits and percent-decodes a request target ("/v1/jobs?state=queued&limit=10") into path and
// query. Errors (bad percent escapes, a target that is not origin-form) have code invalid_argument.
Status parse_target(std::string_view target, HttpRequest& out);

// True when a Content-Type header names JSON ("application/json", parameters allowed).
bool is_json_content_type(std::string_view content_type);

}  // namespace jobctl::net
