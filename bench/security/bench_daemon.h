// What the security benchmarks share: jobctld started as a child on a port it picks, raw loopback
// sockets, and a process's memory from /proc.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "process/child.h"

namespace jobctl::bench {

// A `--name value` flag and where its value goes.
struct Flag {
  const char* name;
  std::variant<int*, int64_t*, std::string*> value;
};

// Reads `--name value` pairs into `flags`; false (with `usage` on stderr) for a flag it does not
// know, a flag without a value, or a number that does not parse.
inline bool parse_flags(int argc, char** argv, const char* usage, std::initializer_list<Flag> flags) {
  for (int i = 1; i < argc; i += 2) {
    const Flag* flag = nullptr;
    for (const Flag& f : flags)
      if (argv[i] == std::string(f.name)) flag = &f;
    if (flag == nullptr || i + 1 >= argc) {
      std::cerr << "usage: " << usage << "\n";
      return false;
    }
    const std::string text = argv[i + 1];
    try {
      if (auto* n = std::get_if<int*>(&flag->value)) **n = std::stoi(text);
      else if (auto* n64 = std::get_if<int64_t*>(&flag->value)) **n64 = std::stoll(text);
      else *std::get<std::string*>(flag->value) = text;
    } catch (const std::exception&) {
      std::cerr << flag->name << ": not a number: " << text << "\nusage: " << usage << "\n";
      return false;
    }
  }
  return true;
}

// A folder of its own under /tmp, removed with what it holds when this goes. path() is empty when
// it could not be made.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix) {
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~ScratchDir() {
    if (!path_.empty()) std::filesystem::remove_all(path_);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A line's number from /proc/<pid>/status, in kB ("VmRSS", "VmHWM").
inline int64_t status_kb(pid_t pid, const char* key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) return std::stoll(line.substr(prefix.size()));
  return -1;
}

inline int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline bool send_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// Samples a process's resident memory (VmRSS) every 5 ms on its own thread from construction to
// stop(), keeping the peak, in kB.
class RssSampler {
 public:
  RssSampler(pid_t pid, int64_t start_kb) : peak_kb_(start_kb), thread_([this, pid] {
    while (!done_) {
      const int64_t rss = status_kb(pid, "VmRSS");
      if (rss > peak_kb_) peak_kb_ = rss;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }) {}
  ~RssSampler() { stop(); }
  // Stops sampling; the peak seen.
  int64_t stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
    return peak_kb_;
  }

 private:
  std::atomic<bool> done_{false};
  std::atomic<int64_t> peak_kb_;
  std::thread thread_;
};

// jobctld started with `args` (after the binary), and the port its start-up line names; null
// (with the reason on stderr) when it did not start within 30 s.
struct StartedDaemon {
  std::unique_ptr<process::Child> child;
  int port = 0;
};
inline StartedDaemon start_jobctld(const std::vector<std::string>& argv) {
  using namespace std::chrono_literals;
  auto spawned = process::Child::spawn(argv, {.stderr_to = process::Output::discard()});
  if (!spawned) {
    std::cerr << spawned.error().message << "\n";
    return {};
  }
  process::Child& d = **spawned;
  // The start-up line: {"event":"listening",...,"port":N,...}
  std::string out;
  int port = 0;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (port == 0 && std::chrono::steady_clock::now() < deadline) {
    pollfd p{d.stdout_fd(), POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const ssize_t n = ::read(d.stdout_fd(), buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (const size_t at = out.find("\"port\":"); at != std::string::npos && out.find('\n', at) != std::string::npos)
      port = std::stoi(out.substr(at + 7));
  }
  if (port == 0) {
    std::cerr << "jobctld did not start: " << out << "\n";
    return {};
  }
  return StartedDaemon{std::move(*spawned), port};
}

}  // namespace jobctl::bench
