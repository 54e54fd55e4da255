// HTTP requests and responses as plain values, so that routing, handlers and their tests never
// see Boost.Beast: only server.cpp converts between these and Beast's types.
//
// Thread safety: plain values. A Responder is called exactly once, from any thread.
#pragma once

#include <any>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/expected.h"

namespace jobctl::net {

// A request body the server streamed to a file instead of holding it in memory (routes whose
// body mode is RequestBody::Kind::file: router.h). The file is removed when the last copy of the request is gone,
// unless a handler took it first (take(): it renamed the file elsewhere).
//
// Thread safety: take() may race with the destructor of another copy's owner; it is atomic.
class BodyFile {
 public:
  explicit BodyFile(std::string path) : path_(std::move(path)) {}
  ~BodyFile();
  BodyFile(const BodyFile&) = delete;
  BodyFile& operator=(const BodyFile&) = delete;

  const std::string& path() const { return path_; }
  // Bytes written (set by the server once the body is complete).
  uint64_t size() const { return size_; }
  void set_size(uint64_t size) { size_ = size; }
  // The caller owns the file from now on (it moves or deletes it); false when already taken.
  bool take() { return !taken_.exchange(true); }

 private:
  std::string path_;
  uint64_t size_ = 0;
  std::atomic<bool> taken_{false};
};

struct HttpRequest {
  std::string method;          // "GET", "POST", ...
  std::string target;          // as received: path and query
  std::string path;            // without the query, percent-decoded
  std::vector<std::pair<std::string, std::string>> query;  // decoded, in order
  std::string content_type;    // the Content-Type header, as sent
  // Every header as received (names as the client spelt them), in order; read with header().
  std::vector<std::pair<std::string, std::string>> headers;
  std::string remote_address;  // the client's IP address ("" in tests without sockets)
  std::string body;            // empty when the body went to body_file
  std::shared_ptr<BodyFile> body_file;  // uploads: the body, on disk
  // What the router's gate learnt about the caller, for the handlers (jobctld: http::Caller,
  // daemon/http/caller.h); empty without a gate. net/ never looks inside.
  std::any context;

  // The last value of a query parameter, if present.
  std::optional<std::string> query_param(std::string_view name) const;
  // The value of a header (name compared without case; the first when sent twice), if present.
  std::optional<std::string_view> header(std::string_view name) const;
  // header(name), or "" when absent.
  std::string header_or_empty(std::string_view name) const;
  // Sets a header, replacing any of the same name (tests and tools that build requests).
  void set_header(std::string_view name, std::string value);
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Allow, Location)
  // When set, the body is this file's bytes instead of `body` (blob downloads): the server sends
  // it a piece at a time, never whole in memory, each piece under the write timeout. A file that
  // cannot be opened by then is answered 404.
  std::string body_path;
  // Kept alive until the answer is written or the connection is gone (a download slot).
  std::shared_ptr<const void> held;
};

using Responder = std::function<void(HttpResponse)>;

// Splits and percent-decodes a request target ("/v1/jobs?state=queued&limit=10") into path and
// query. Errors (bad percent escapes, a target that is not origin-form) have code invalid_argument.
Status parse_target(std::string_view target, HttpRequest& out);

// A Content-Type header's media type, lower case, without parameters ("application/json").
std::string media_type_of(std::string_view content_type);
// True when a Content-Type header names JSON ("application/json", parameters allowed).
bool is_json_content_type(std::string_view content_type);

}  // namespace jobctl::net
