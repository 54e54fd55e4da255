// A small blocking HTTP/1.1 client over libcurl for talking to jobctld (and, later, to
// jobctl-cloudsim). It keeps one connection open between requests (keep-alive).
//
// Ownership and thread safety: an HttpClient owns one curl easy handle and is NOT thread-safe;
// give each thread its own client. curl_global_init runs once per process, thread-safely, the
// first time any client is constructed.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/expected.h"

struct sockaddr;

namespace jobctl::client {

struct HttpClientOptions {
  long connect_timeout_ms = 5000;
  long timeout_ms = 30000;       // whole request; a request may ask for longer (long-polls)
  std::string bearer_token;      // sent as "Authorization: Bearer ..." when not empty
  // A worker's own secret (the worker protocol, docs/security.md): sent as "X-Worker-Secret: ..."
  // when not empty.
  std::string worker_secret{};
  // When set, a request in progress is aborted (Error code "cancelled") soon after this becomes
  // true: a worker's long-poll must not delay its own shutdown. Not owned.
  const std::atomic<bool>* cancel = nullptr;
  // https:// servers: the PEM file of CA certificates to verify them with (a self-signed
  // jobctld's own certificate, say). Empty: $JOBCTL_CA_FILE when set, else the system's CAs.
  // Verification of the certificate and the host name is never turned off.
  std::string ca_file{};
  // Downloads (fetch_url): follow HTTP redirects, and stop an answer whose body grows past
  // max_body_bytes (0: no limit) with code "payload_too_large".
  bool follow_redirects = false;
  uint64_t max_body_bytes = 0;
  // When set, each address a request is about to connect to (after name resolution, so a name
  // cannot resolve around it) is passed here first; false refuses it, and the request fails with
  // code "permission_denied". jobctld's webhooks use it to keep receivers off private networks.
  std::function<bool(const ::sockaddr* address)> allow_address{};
};

struct HttpResult {
  long status = 0;
  std::string content_type;
  std::string body;
};

// Files a request streams instead of holding bodies in memory (a job's outputs): the body read
// from upload_fd (upload_bytes of it, sent as application/octet-stream unless a Content-Type line
// is given), and a 2xx answer's body written to download_fd; any other answer's body stays in
// HttpResult::body (it is the error). -1: that side is in memory as usual.
struct FileStreams {
  int upload_fd = -1;
  uint64_t upload_bytes = 0;
  int download_fd = -1;
};

class HttpClient {
 public:
  // base_url: "http://host:port" (a trailing slash is ignored).
  explicit HttpClient(std::string base_url, HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends one request. `path` starts with '/' and may carry a query string (or is empty: the base
  // URL names the whole resource). A JSON body is sent with Content-Type application/json.
  // timeout_ms 0 uses the client's default.
  // Errors (transport only; any HTTP status is a result): code "unavailable" when the server
  // cannot be reached, "timeout", "cancelled", or "io".
  // `extra_headers`: whole header lines ("Idempotency-Key: k-1") sent with this request only; an
  // Accept or Content-Type line there replaces the JSON default.
  Expected<HttpResult> request(std::string_view method, std::string_view path,
                               std::string_view json_body = {}, long timeout_ms = 0,
                               const std::vector<std::string>& extra_headers = {});

  // request(), its body and/or its answer streamed through files (FileStreams). Errors as
  // request()'s, plus "io" when a file cannot be read or written.
  Expected<HttpResult> request_streaming(std::string_view method, std::string_view path, const FileStreams& files,
                                         long timeout_ms = 0, const std::vector<std::string>& extra_headers = {});
  // GETs `path`, writing a 2xx answer's body to `out` as it arrives (request_streaming with the
  // file as its download): a log download.
  Expected<HttpResult> get_to_file(std::string_view path, std::FILE* out, long timeout_ms = 0);

  const std::string& base_url() const { return base_url_; }
  // From now on every request carries this worker secret (a worker learns it when it registers).
  void set_worker_secret(std::string secret) { options_.worker_secret = std::move(secret); }

 private:
  Expected<HttpResult> perform(std::string_view method, std::string_view path, std::string_view json_body,
                               long timeout_ms, const std::vector<std::string>& extra_headers, const FileStreams* files);

  std::string base_url_;
  HttpClientOptions options_;
  void* curl_ = nullptr;  // CURL*
};

// GETs one whole resource by its URL (http, https, or file: a file's status is 0), following
// redirects, refusing a body over max_bytes: a download such as `jobctl catalog update`'s.
// Errors as HttpClient::request's, plus "payload_too_large"; any HTTP status is a result.
Expected<HttpResult> fetch_url(const std::string& url, long timeout_ms, uint64_t max_bytes);

// Whether `address` (IPv4 or IPv6) is one anyone on the internet could reach: not loopback,
// private (RFC 1918, unique-local), link-local, carrier-grade NAT, unspecified or multicast, nor
// an IPv4-mapped IPv6 form of those.
bool is_public_address(const ::sockaddr* address);

// An http:// or https:// URL's parts, checked by libcurl's URL parser; invalid_argument naming
// `field` when it is not one (another scheme, no host, credentials in it).
struct HttpUrl {
  std::string scheme;
  std::string host;
};
Expected<HttpUrl> parse_http_url(const std::string& url, const std::string& field);

// Percent-encodes a query-string value.
std::string url_encode(std::string_view value);

}  // namespace jobctl::client
