// Refuses requests that a web browser was made to send by a page of another site
// (docs/security.md, "Browsers"), before routing, credentials or the body:
//
//   - DNS rebinding: a page of attacker.test whose name is made to resolve to 127.0.0.1 is, to
//     the browser, same-origin with everything it fetches from "its" host — but every request
//     carries Host: attacker.test. So Host must name this server: its listen address (any IP
//     address of the machine when it listens on all of them; 127.0.0.1, [::1] and localhost
//     too when it listens on loopback) with the port it listens on, or one of the configured
//     names (allowed_hosts: "name" for any port, "name:port").
//   - Cross-site requests: a state-changing request (POST, PUT, PATCH, DELETE) with an Origin
//     other than this server's own (scheme://Host), with Origin "null", or with a
//     Sec-Fetch-Site other than same-origin or none, is refused.
//   - "Simple" requests, which a page of any site may send without asking first (a form POST,
//     a text/plain fetch): a POST, and a PUT, PATCH or DELETE with a body, must carry
//     Content-Type application/json — application/octet-stream on upload routes. Neither is a
//     type a form or a no-cors fetch can send, so a browser sends such a request cross-site only
//     after a CORS preflight, which this server never grants.
//
// Clients that are not browsers (the CLI, workers, curl) send a correct Host and no Origin.
//
// Thread safety: immutable after construction; check() may run on any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "net/message.h"

namespace jobctl::net {

class BrowserGuard {
 public:
  // `listen_host`: the IP address listened on, as configured ("127.0.0.1", "::1", "0.0.0.0");
  // `port`: the port actually listened on; `tls`: whether the server speaks HTTPS (the scheme
  // its own Origin has); `allowed_hosts`: further names clients may use ("jobctld",
  // "gpu.example.com:443").
  BrowserGuard(std::string listen_host, uint16_t port, bool tls, std::vector<std::string> allowed_hosts);

  // The reason to refuse `request` (its headers are enough), or nullopt. `has_body`: a body
  // follows the headers; `upload`: the route takes an application/octet-stream body. Codes: invalid_argument (no Host: 400),
  // permission_denied (a foreign Host or Origin: 403), unsupported_media_type (415).
  std::optional<Error> check(const HttpRequest& request, bool has_body, bool upload) const;

 private:
  struct Authority {
    std::string host;  // lower case; an IPv6 address without its brackets
    int port = -1;     // -1: none given
  };
  static std::optional<Authority> parse_authority(std::string_view text);
  bool host_allowed(const Authority& a) const;

  std::string listen_host_;
  uint16_t port_;
  bool tls_;
  std::vector<Authority> allowed_;
};

// Whether `method` may change state (POST, PUT, PATCH, DELETE: anything but GET, HEAD, OPTIONS).
bool is_state_changing(std::string_view method);

}  // namespace jobctl::net
