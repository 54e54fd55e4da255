#include "net/listen_address.h"

#include <charconv>

namespace jobctl::net {

Expected<ListenAddress> parse_listen_address(std::string_view text, std::string_view field) {
  auto bad = [&](const std::string& what) {
    return make_error(ErrorCode::invalid_argument, std::string(field) + " " + what, std::string(field));
  };
  std::string_view host, port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return bad("has an unclosed '['");
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return bad("must be HOST:PORT");
      port = text.substr(close + 2);
    }
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      port = text;
    } else {
      host = text.substr(0, colon);
      port = text.substr(colon + 1);
    }
  }
  int p = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || p < 0 || p > 65535)
    return bad("needs a port between 0 and 65535 (got '" + std::string(text) + "')");
  ListenAddress a;
  if (!host.empty()) a.host = std::string(host);
  a.port = p;
  return a;
}

std::string listen_url(bool tls, const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  return std::string(tls ? "https://" : "http://") + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace jobctl::net
