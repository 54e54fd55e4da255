// A raw TCP connection to a server on loopback, for what a polite HTTP client would never send
// (half a request, a body nobody asked for, framing a proxy would read differently), optionally
// from another loopback address (another "client" as far as per-client limits go).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <string_view>
#include <utility>

namespace jobctl::testing {

class RawConnection {
 public:
  // Connects to 127.0.0.1:port; `from`: the local address to connect from ("": any).
  explicit RawConnection(int port, const std::string& from = "") : port_(port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    if (!from.empty()) {
      sockaddr_in src{};
      src.sin_family = AF_INET;
      ::inet_pton(AF_INET, from.c_str(), &src.sin_addr);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0) close();
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) close();
  }
  ~RawConnection() { close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return fd_ >= 0; }
  // The server's address as a Host header names it ("127.0.0.1:PORT").
  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Sends all of `data`; false once the peer is gone.
  bool send(std::string_view data) {
    while (!data.empty() && fd_ >= 0) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return fd_ >= 0;
  }
  // One response: its head and its Content-Length body (what came of it before `timeout`; empty
  // when the peer closed first).
  std::string read_response(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const size_t head_end = buf_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        size_t length = 0;
        const size_t cl = buf_.find("Content-Length: ");
        if (cl != std::string::npos && cl < head_end) length = std::stoul(buf_.substr(cl + 16));
        if (buf_.size() >= head_end + 4 + length) {
          std::string r = buf_.substr(0, head_end + 4 + length);
          buf_.erase(0, head_end + 4 + length);
          return r;
        }
      }
      if (!receive(deadline)) return std::exchange(buf_, {});
    }
  }
  // Everything the peer sends until it closes (or `timeout` passes).
  std::string read_until_closed(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (receive(deadline)) {
    }
    return std::exchange(buf_, {});
  }
  // Whether the peer closed the connection within `timeout`.
  bool closed_by_peer(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    read_until_closed(timeout);
    return closed_;
  }

 private:
  // Appends what arrives before the deadline; false when nothing more will (closed, timed out).
  bool receive(std::chrono::steady_clock::time_point deadline) {
    if (fd_ < 0 || closed_) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char tmp[8192];
    const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }

  int port_ = 0;
  int fd_ = -1;
  bool closed_ = false;
  std::string buf_;
};

// The status code of a raw response ("HTTP/1.1 401 ..."), or 0.
inline int status_of(const std::string& response) {
  if (response.size() < 12 || response.rfind("HTTP/1.", 0) != 0) return 0;
  return std::stoi(response.substr(9, 3));
}

}  // namespace jobctl::testing
