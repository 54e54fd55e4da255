// jobctld's HTTP/1.1 server (Boost.Beast + Asio; this header and everything but server.cpp stay
// free of them).
//
// Model: `io_threads` threads each run their own io_context, and accepted connections are dealt
// to them in turn; each connection is a session on its own strand, kept alive by
// shared_from_this while it has an operation pending. Requests are handled on a separate pool of
// `handler_threads` (handlers may block on the store), and their answers are posted back to the
// connection's strand; routes added with Dispatch::io (router.h: handlers that never block) run
// on the I/O thread instead.
//
// A request is read in two steps (docs/security.md, "Threat model"). The headers first
// (at most max_header_bytes, 431 past it): the target is parsed, the route matched and its gate
// run (Router::admit: credentials, roles, limits) before any body byte is read, so a refused
// request costs no memory for its body; the refusal is sent and the connection closed after
// a short drain. Then the body, as the matched route declares it (router.h, RequestBody): held
// in memory, limited to the route's max_bytes or max_body_bytes (413, from Content-Length before
// reading when it is given) — or, for uploads, streamed to a new file in upload_dir (at most
// the route's max_bytes or max_upload_bytes, at most max_concurrent_uploads at once: 503 with
// Retry-After past it) and handed to the handler as HttpRequest::body_file. A
// Transfer-Encoding whose last coding is not chunked, or one sent with Content-Length, is a 400
// (either would let a proxy and this server disagree about where the request ends).
//
// Every request is first checked by a BrowserGuard (browser_guard.h: Host, Origin and
// Content-Type, so that no web page can make a browser act on this server), then routed.
//
// Limits on connections: every read has a deadline (a new connection sends its first request's
// headers within header_timeout_ms; then read_timeout_ms per read; a kept-alive connection waits
// idle_timeout_ms for its next request); at most max_connections open at once and
// max_connections_per_client per client network — the /24 of an IPv4 address, the /64 of an
// IPv6 one, since one client easily holds many addresses of either — (past either, a new
// connection gets a 503 and is closed). The last reserved_connections of max_connections are
// kept back: a connection accepted into one is read as any other, but each of its requests is
// served only if may_use_reserve holds once the gate has run (jobctld: a valid token or worker
// secret, or /healthz), else answered 503 and closed — so idle or anonymous connections cannot
// take every slot from workers and authenticated clients. When the process runs out of file
// descriptors, accepting pauses with a growing back-off instead of spinning.
//
// With tls_cert_file/tls_key_file every connection speaks TLS 1.2+ (Beast over OpenSSL): the
// handshake runs under the read timeout before the first request.
//
// Shutdown is two-phase: begin_shutdown() stops accepting and closes idle connections; requests
// in flight finish and are answered with "Connection: close"; stop() waits up to
// shutdown_grace_ms for them, then closes whatever is left and joins every thread.
//
// Ownership: borrows the Router (it must outlive the server). Thread safety: start(),
// begin_shutdown(), wait_idle() and stop() may be called from any thread, but not concurrently
// with each other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/expected.h"
#include "net/router.h"

namespace jobctl::net {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;              // 0: any free port (start() returns it)
  int io_threads = 2;
  int handler_threads = 8;
  size_t max_body_bytes = 1 << 20;   // 1 MiB
  size_t max_header_bytes = 8 << 10; // 8 KiB
  int header_timeout_ms = 5000;      // a new connection's first request headers (TLS handshake included)
  int read_timeout_ms = 30000;       // per read: a slow or idle client is disconnected
  int idle_timeout_ms = 15000;       // a kept-alive connection waiting for its next request
  int write_timeout_ms = 30000;
  int max_connections = 10000;            // open at once; a new one past it gets 503 and is closed
  int max_connections_per_client = 1000;  // open at once from one client network (/24, /64)
  int reserved_connections = 0;           // of max_connections, kept for may_use_reserve requests
  // Whether a request on a reserved connection is served (called after the gate, which has
  // attached what it learnt of the caller: HttpRequest::context). Unset: none is.
  std::function<bool(const HttpRequest&)> may_use_reserve;
  // Names clients may send as Host besides the listen address (browser_guard.h).
  std::vector<std::string> allowed_hosts;
  int shutdown_grace_ms = 10000;
  std::string server_name = "jobctld";
  // Routes whose body goes to a file (RequestBody::Kind::file: checkpoint and bundle uploads) may
  // carry up to max_upload_bytes (unless the route says) instead of max_body_bytes, streamed to a
  // file in upload_dir (which must exist when such a route does; the file is created there with
  // O_EXCL, and removed unless the handler takes it).
  size_t max_upload_bytes = 0;
  std::string upload_dir;
  int max_concurrent_uploads = 4;
  // TLS (docs/security.md): PEM certificate chain and private key. Both empty: plain HTTP.
  // start() fails with the field named when only one is set or a file cannot be used.
  std::string tls_cert_file;
  std::string tls_key_file;
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, const Router& router);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the threads. Returns the port listened on.
  Expected<uint16_t> start();
  // Phase 1: stop accepting, close idle connections, answer in-flight requests with close.
  void begin_shutdown();
  // True once no request is in flight; waits up to timeout_ms.
  bool wait_idle(int timeout_ms);
  // Phase 2: begin_shutdown(), wait up to the grace period, close everything, join threads.
  void stop();

  // Requests currently being read or handled.
  int in_flight() const;
  // Connections open now.
  int connections() const;

  struct Impl;  // server.cpp's state, named here so its connection class can reach it

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace jobctl::net
