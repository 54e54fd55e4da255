#include "worker/rendezvous_endpoint.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "client/http_client.h"

namespace jobctl::worker {

namespace {

// Closes the socket when it goes.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

using AddrInfo = std::unique_ptr<addrinfo, void (*)(addrinfo*)>;

Expected<AddrInfo> resolve(const std::string& host, int socktype) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = socktype;
  addrinfo* found = nullptr;
  // The service is any port: only the address matters to the callers (routing, or a bind of port 0).
  const int rc = ::getaddrinfo(host.c_str(), "9", &hints, &found);
  if (rc != 0) return make_error(ErrorCode::unavailable, "cannot resolve " + host + ": " + ::gai_strerror(rc));
  return AddrInfo(found, ::freeaddrinfo);
}

std::string numeric_host(const sockaddr* addr, socklen_t len) {
  char host[NI_MAXHOST] = {0};
  if (::getnameinfo(addr, len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return {};
  return host;
}

}  // namespace

Status check_rendezvous_address(std::string_view address) {
  if (address.empty() || address.size() > 255 || address.find_first_of(" \t\r\n,") != std::string_view::npos)
    return make_error(ErrorCode::invalid_argument,
                      "address must be a host name or IP address (at most 255 characters, no spaces or commas), "
                      "not '" + std::string(address) + "'",
                      "address");
  return {};
}

Expected<std::string> local_address_toward(const std::string& server_url) {
  auto url = client::parse_http_url(server_url, "server");
  if (!url) return url.error();
  std::string host = url->host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  auto found = resolve(host, SOCK_DGRAM);
  if (!found) return found.error();
  std::string why = "no address of " + host + " is reachable";
  for (const addrinfo* a = found->get(); a != nullptr; a = a->ai_next) {
    Socket s(::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (s.fd() < 0) continue;
    // A connected UDP socket is given the source address the routing table picks; nothing is sent.
    if (::connect(s.fd(), a->ai_addr, a->ai_addrlen) != 0) {
      why = "no route to " + host + ": " + std::strerror(errno);
      continue;
    }
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&local), &len) != 0) continue;
    std::string address = numeric_host(reinterpret_cast<const sockaddr*>(&local), len);
    if (!address.empty()) return address;
  }
  return make_error(ErrorCode::unavailable, why);
}

Expected<int> free_tcp_port(const std::string& address) {
  auto found = resolve(address, SOCK_STREAM);
  if (!found) return found.error();
  std::string why = "no address";
  for (const addrinfo* a = found->get(); a != nullptr; a = a->ai_next) {
    Socket s(::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (s.fd() < 0) {
      why = std::strerror(errno);
      continue;
    }
    sockaddr_storage bound{};
    std::memcpy(&bound, a->ai_addr, a->ai_addrlen);
    if (bound.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&bound)->sin_port = 0;
    else if (bound.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port = 0;
    if (::bind(s.fd(), reinterpret_cast<const sockaddr*>(&bound), a->ai_addrlen) != 0) {
      why = std::strerror(errno);
      continue;
    }
    socklen_t len = sizeof bound;
    if (::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      why = std::strerror(errno);
      continue;
    }
    const int port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
                                                 : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
    if (port > 0) return port;
  }
  return make_error(ErrorCode::io, "cannot bind a TCP port on " + address + ": " + why);
}

}  // namespace jobctl::worker
