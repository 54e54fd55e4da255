// Where a server listens: "HOST:PORT", ":PORT", "PORT" or "[IPv6]:PORT" parsed into a host and a
// port, and the inverse as a URL. jobctld, its provisioner (the URL workers call back) and
// jobctl-cloudsim share it so that an IPv6 host is bracketed the same way everywhere.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "base/expected.h"

namespace jobctl::net {

struct ListenAddress {
  std::string host = "127.0.0.1";  // loopback unless asked otherwise
  int port = 8080;
};

// Parses `text`; an empty host means 127.0.0.1. Errors name the field `field` ("listen").
Expected<ListenAddress> parse_listen_address(std::string_view text, std::string_view field = "listen");

// "http://127.0.0.1:8080", "https://[::1]:8443" (an IPv6 host in brackets).
std::string listen_url(bool tls, const std::string& host, int port);

}  // namespace jobctl::net
