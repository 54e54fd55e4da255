// A plain HTTP/1.1 server of the test's own on loopback: it records every request (head and body) and
// answers each with what `answer` makes of that head (a whole response, status line to body),
// one request per connection. For what jobctl sends to a server that is not jobctld (a saved
// token must not go there) and what it fetches from one (a catalog download, a redirect).
//
// Thread safety: serves on its own thread; seen() may be called from any thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace jobctl::testing {

class RecordingServer {
 public:
  using Answer = std::function<std::string(const std::string& request_head)>;

  // A response with this status, type and body (Content-Length set, the connection closed).
  static std::string response(int status, const std::string& content_type, const std::string& body,
                              const std::string& extra_headers = "") {
    const char* reason = status == 200 ? "OK" : status == 302 ? "Found" : status == 404 ? "Not Found" : "Status";
    return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: " + content_type +
           "\r\nConnection: close\r\n" + extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
           body;
  }

  explicit RecordingServer(Answer answer) : answer_(std::move(answer)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 16);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~RecordingServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  RecordingServer(const RecordingServer&) = delete;
  RecordingServer& operator=(const RecordingServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Every request head received so far, in order.
  std::string seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }
  struct Request {
    std::string head;  // request line and headers, up to the blank line
    std::string body;
  };
  // Every request received so far, head and body, in order.
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 2000) <= 0) break;
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      // The body, as long as Content-Length says (what came with the head is its start).
      std::string body;
      if (const auto end = head.find("\r\n\r\n"); end != std::string::npos) {
        body = head.substr(end + 4);
        head.resize(end + 4);
        size_t length = 0;
        for (const std::string name : {"Content-Length:", "content-length:"})
          if (const auto at = head.find(name); at != std::string::npos)
            length = std::stoul(head.substr(at + name.size(), head.find("\r\n", at) - at - name.size()));
        while (body.size() < length) {
          pollfd q{c, POLLIN, 0};
          if (::poll(&q, 1, 2000) <= 0) break;
          const ssize_t n = ::recv(c, buf, sizeof buf, 0);
          if (n <= 0) break;
          body.append(buf, static_cast<size_t>(n));
        }
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        seen_ += head;
        requests_.push_back({head, body});
      }
      const std::string answer = answer_(head);
      for (size_t sent = 0; sent < answer.size();) {
        const ssize_t n = ::send(c, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      ::close(c);
    }
  }

  Answer answer_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::string seen_;
  std::vector<Request> requests_;
};

}  // namespace jobctl::testing
