// jobctld's peak memory while clients without credentials flood it with checkpoint uploads: each
// of CLIENTS connections declares and sends an upload of MIB MiB (Content-Length, then 1 MiB
// writes for as long as the daemon takes them) to a jobctld with auth on, on loopback. The daemon
// refuses every one on its headers (401) and drains what follows for a moment before closing
// (net/server.h), so its memory must not grow with what the clients send.
//
// Figures: bytes the clients got through, the answers they saw, and jobctld's resident memory
// (VmRSS sampled every 5 ms, and the kernel's peak, VmHWM) before and during the flood.
//
// Usage: jobctl-bench-upload-flood [--clients N] [--mib M] [--jobctld PATH]   (20, 900, the built one)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "process/child.h"

namespace {

using jobctl::process::Child;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

int64_t status_kb(pid_t pid, const char* key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const std::string prefix = std::string(key) + ":";
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) return std::stoll(line.substr(prefix.size()));
  return -1;
}

int connect_to(int port) {
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

bool send_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int clients = 20;
  int64_t mib = 900;
  std::string jobctld = JOBCTLD_PATH;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--clients") clients = std::stoi(argv[i + 1]);
    else if (flag == "--mib") mib = std::stoll(argv[i + 1]);
    else if (flag == "--jobctld") jobctld = argv[i + 1];
    else {
      std::cerr << "usage: jobctl-bench-upload-flood [--clients N] [--mib M] [--jobctld PATH]\n";
      return 2;
    }
  }
  char tmpl[] = "/tmp/jobctl-bench-flood-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return 1;
  const std::string dir = tmpl;
  auto spawned = Child::spawn({jobctld, "--listen", "127.0.0.1:0", "--data-dir", dir + "/data", "--auth"},
                              {.stderr_to = jobctl::process::Output::discard()});
  if (!spawned) {
    std::cerr << spawned.error().message << "\n";
    return 1;
  }
  Child& d = **spawned;
  // The start-up line: {"event":"listening",...,"port":N,...}
  std::string out;
  int port = 0;
  char buf[4096];
  const auto start_deadline = Clock::now() + 30s;
  while (port == 0 && Clock::now() < start_deadline) {
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
    return 1;
  }
  std::this_thread::sleep_for(200ms);
  const pid_t pid = d.pid();
  const int64_t base_rss = status_kb(pid, "VmRSS");

  std::atomic<bool> done{false};
  std::atomic<int64_t> peak_rss{base_rss};
  std::thread sampler([&] {
    while (!done) {
      const int64_t rss = status_kb(pid, "VmRSS");
      if (rss > peak_rss) peak_rss = rss;
      std::this_thread::sleep_for(5ms);
    }
  });

  const uint64_t declared = static_cast<uint64_t>(mib) << 20;
  std::atomic<uint64_t> sent{0};
  std::mutex mu;
  std::map<std::string, int> answers;
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&] {
      const int fd = connect_to(port);
      if (fd < 0) return;
      const std::string head = "PUT /v1/jobs/1/checkpoints/1?worker_id=1&epoch=1&crc32c=00000000 HTTP/1.1\r\n"
                               "Host: 127.0.0.1:" + std::to_string(port) + "\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                               std::to_string(declared) + "\r\n\r\n";
      std::vector<char> chunk(1 << 20, 'A');
      uint64_t mine = 0;
      if (send_all(fd, head.data(), head.size()))
        while (mine < declared && send_all(fd, chunk.data(), chunk.size())) mine += chunk.size();
      sent += mine;
      std::string answer;
      char rbuf[512];
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 2000) > 0) {
        const ssize_t n = ::recv(fd, rbuf, sizeof rbuf, 0);
        if (n > 12) answer.assign(rbuf + 9, 3);
      }
      ::close(fd);
      std::lock_guard<std::mutex> lock(mu);
      answers[answer.empty() ? "none" : answer]++;
    });
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::this_thread::sleep_for(100ms);
  done = true;
  sampler.join();
  const int64_t hwm = status_kb(pid, "VmHWM");
  d.terminate(SIGTERM, 10s);
  std::filesystem::remove_all(dir);

  std::printf("clients %d, each declaring %lld MiB (%s)\n", clients, static_cast<long long>(mib), jobctld.c_str());
  std::printf("sent before the daemon closed: %.0f MiB in %.2f s\n", static_cast<double>(sent.load()) / (1 << 20),
              seconds);
  std::printf("answers:");
  for (const auto& [status, n] : answers) std::printf(" %s x%d", status.c_str(), n);
  std::printf("\njobctld RSS before: %.1f MB; peak sampled RSS during: %.1f MB; peak (VmHWM): %.1f MB\n",
              static_cast<double>(base_rss) / 1024, static_cast<double>(peak_rss.load()) / 1024,
              static_cast<double>(hwm) / 1024);
  return 0;
}
