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
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/security/bench_daemon.h"

namespace {

using Clock = std::chrono::steady_clock;
using jobctl::bench::connect_to;
using jobctl::bench::send_all;
using jobctl::bench::status_kb;
using namespace std::chrono_literals;

}  // namespace

int main(int argc, char** argv) {
  int clients = 20;
  int64_t mib = 900;
  std::string jobctld = JOBCTLD_PATH;
  if (!jobctl::bench::parse_flags(argc, argv, "jobctl-bench-upload-flood [--clients N] [--mib M] [--jobctld PATH]",
                                  {{"--clients", &clients}, {"--mib", &mib}, {"--jobctld", &jobctld}}))
    return 2;
  const jobctl::bench::ScratchDir scratch("jobctl-bench-flood");
  if (scratch.path().empty()) return 1;
  const std::string& dir = scratch.path();
  auto started = jobctl::bench::start_jobctld({jobctld, "--listen", "127.0.0.1:0", "--data-dir", dir + "/data", "--auth"});
  if (!started.child) return 1;
  auto& d = *started.child;
  const int port = started.port;
  std::this_thread::sleep_for(200ms);
  const pid_t pid = d.pid();
  const int64_t base_rss = status_kb(pid, "VmRSS");

  jobctl::bench::RssSampler sampler(pid, base_rss);

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
  const int64_t peak_rss = sampler.stop();
  const int64_t hwm = status_kb(pid, "VmHWM");
  d.terminate(SIGTERM, 10s);

  std::printf("clients %d, each declaring %lld MiB (%s)\n", clients, static_cast<long long>(mib), jobctld.c_str());
  std::printf("sent before the daemon closed: %.0f MiB in %.2f s\n", static_cast<double>(sent.load()) / (1 << 20),
              seconds);
  std::printf("answers:");
  for (const auto& [status, n] : answers) std::printf(" %s x%d", status.c_str(), n);
  std::printf("\njobctld RSS before: %.1f MB; peak sampled RSS during: %.1f MB; peak (VmHWM): %.1f MB\n",
              static_cast<double>(base_rss) / 1024, static_cast<double>(peak_rss) / 1024,
              static_cast<double>(hwm) / 1024);
  return 0;
}
