#include "net/browser_guard.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstring>

namespace jobctl::net {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// A header value as it may appear in a message: cut and printable.
std::string shown(std::string_view value) {
  std::string out;
  for (char c : value.substr(0, 100)) out.push_back(std::isprint(static_cast<unsigned char>(c)) ? c : '?');
  return out;
}

// An IP address literal in a fixed form (16 bytes, IPv4 mapped into IPv6), or nullopt.
std::optional<std::array<unsigned char, 16>> ip_bytes(const std::string& host) {
  std::array<unsigned char, 16> out{};
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    out[10] = out[11] = 0xff;
    std::memcpy(out.data() + 12, &v4, 4);
    return out;
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    std::memcpy(out.data(), &v6, 16);
    return out;
  }
  return std::nullopt;
}

bool is_v4(const std::array<unsigned char, 16>& a) {
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(a.data(), kMapped, 12) == 0;
}
bool is_loopback(const std::array<unsigned char, 16>& a) {
  if (is_v4(a)) return a[12] == 127;
  return std::all_of(a.begin(), a.end() - 1, [](unsigned char b) { return b == 0; }) && a[15] == 1;
}
bool is_unspecified(const std::array<unsigned char, 16>& a) {
  if (is_v4(a)) return a[12] == 0 && a[13] == 0 && a[14] == 0 && a[15] == 0;
  return std::all_of(a.begin(), a.end(), [](unsigned char b) { return b == 0; });
}

}  // namespace

bool is_state_changing(std::string_view method) {
  return method != "GET" && method != "HEAD" && method != "OPTIONS";
}

BrowserGuard::BrowserGuard(std::string listen_host, uint16_t port, bool tls, std::vector<std::string> allowed_hosts)
    : listen_host_(std::move(listen_host)), port_(port), tls_(tls) {
  for (const std::string& name : allowed_hosts)
    if (auto a = parse_authority(name)) allowed_.push_back(std::move(*a));
}

// "name", "name:port", "[v6]", "[v6]:port"; nullopt when malformed.
std::optional<BrowserGuard::Authority> BrowserGuard::parse_authority(std::string_view text) {
  Authority a;
  std::string_view host = text, port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = text.substr(1, close - 1);
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port = rest.substr(1);
      if (port.empty()) return std::nullopt;
    }
  } else {
    const size_t colon = text.find(':');
    if (colon != std::string_view::npos) {
      if (text.find(':', colon + 1) != std::string_view::npos) return std::nullopt;  // IPv6 needs brackets
      host = text.substr(0, colon);
      port = text.substr(colon + 1);
      if (port.empty()) return std::nullopt;
    }
  }
  if (host.empty() || host.find_first_of(" \t/@?#[]") != std::string_view::npos) return std::nullopt;
  a.host = lower(host);
  if (!port.empty()) {
    int p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || end != port.data() + port.size() || p < 0 || p > 65535) return std::nullopt;
    a.port = p;
  }
  return a;
}

bool BrowserGuard::host_allowed(const Authority& a) const {
  const int port = a.port >= 0 ? a.port : (tls_ ? 443 : 80);
  for (const Authority& name : allowed_)
    if (name.host == a.host && (name.port < 0 || name.port == port)) return true;
  if (port != port_) return false;
  const auto listen = ip_bytes(listen_host_);
  if (a.host == "localhost") return listen && (is_loopback(*listen) || is_unspecified(*listen));
  const auto ip = ip_bytes(a.host);
  if (!ip || !listen) return false;
  if (*ip == *listen) return true;
  // An address literal cannot be rebound: a page whose origin is one of this machine's
  // addresses was served by this machine.
  if (is_unspecified(*listen)) return true;
  return is_loopback(*listen) && is_loopback(*ip);
}

std::optional<Error> BrowserGuard::check(const HttpRequest& request, bool has_body, bool upload) const {
  const std::string host_header = request.header_or_empty("Host");
  const std::string origin_header = request.header_or_empty("Origin");
  const std::string fetch_site = request.header_or_empty("Sec-Fetch-Site");
  if (host_header.empty())
    return make_error(ErrorCode::invalid_argument, "a Host header is required", "Host");
  const auto host = parse_authority(host_header);
  if (!host) return make_error(ErrorCode::invalid_argument, "the Host header '" + shown(host_header) + "' is malformed", "Host");
  if (!host_allowed(*host))
    return make_error(ErrorCode::permission_denied,
                      "Host '" + shown(host_header) +
                          "' is not this server's address (a name clients use must be configured: http.allowed_hosts)",
                      "Host");
  if (!is_state_changing(request.method)) return std::nullopt;

  if (!origin_header.empty()) {
    const std::string origin = lower(origin_header);
    const std::string scheme = tls_ ? "https://" : "http://";
    std::optional<Authority> from;
    if (origin.rfind(scheme, 0) == 0) from = parse_authority(std::string_view(origin).substr(scheme.size()));
    const int default_port = tls_ ? 443 : 80;
    const bool same = from && from->host == host->host &&
                      (from->port >= 0 ? from->port : default_port) == (host->port >= 0 ? host->port : default_port);
    if (!same)
      return make_error(ErrorCode::permission_denied,
                        "a " + request.method + " from the web page of another origin ('" + shown(origin_header) +
                            "') is refused",
                        "Origin");
  }
  if (!fetch_site.empty()) {
    const std::string site = lower(fetch_site);
    if (site != "same-origin" && site != "none")
      return make_error(ErrorCode::permission_denied,
                        "a " + request.method + " that a browser sent for another site (Sec-Fetch-Site: " +
                            shown(fetch_site) + ") is refused",
                        "Sec-Fetch-Site");
  }
  if (request.method == "POST" || has_body) {
    const std::string_view wanted = upload ? "application/octet-stream" : "application/json";
    if (media_type_of(request.content_type) != wanted)
      return make_error(ErrorCode::unsupported_media_type,
                        "a " + request.method + " here must be sent with Content-Type: " + std::string(wanted) +
                            " (got '" + shown(request.content_type) + "')",
                        "Content-Type");
  }
  return std::nullopt;
}

}  // namespace jobctl::net
