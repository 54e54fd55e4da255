// jobctld's peak memory while blobs move both ways: a code bundle of MIB MiB is stored first;
// then DOWNLOADERS clients download it at once while one more client uploads another bundle of
// the same size, on loopback, to a jobctld with the default settings (auth off). Each download is
// sent from the blob's file a piece at a time and the upload streams to a file and is hashed from
// it (docs/security.md, "Threat model"), so the daemon's memory must not grow with the blobs.
//
// Figures: seconds, bytes each client moved and the answers, and jobctld's resident memory
// (VmRSS sampled every 5 ms, and the kernel's peak, VmHWM) at rest, after the first upload and
// during the transfers.
//
// Usage: jobctl-bench-blob-memory [--downloaders N] [--mib M] [--jobctld PATH]   (6, 256, the built one)
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
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

// Reads one HTTP answer to its end, dropping its body: {status line, bytes of body}.
std::pair<std::string, uint64_t> read_answer(int fd) {
  std::string head;
  std::vector<char> buf(1 << 16);
  uint64_t body = 0;
  size_t head_end = std::string::npos;
  while (head_end == std::string::npos) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) return {head.substr(0, head.find('\r')), 0};
    head.append(buf.data(), static_cast<size_t>(n));
    head_end = head.find("\r\n\r\n");
  }
  uint64_t length = 0;
  if (const size_t cl = head.find("Content-Length: "); cl != std::string::npos && cl < head_end)
    length = std::stoull(head.substr(cl + 16));
  body = head.size() - (head_end + 4);
  std::string first_bytes = head.substr(head_end + 4);
  while (body < length) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    if (first_bytes.size() < 4096) first_bytes.append(buf.data(), static_cast<size_t>(n));
    body += static_cast<uint64_t>(n);
  }
  std::string status = head.substr(0, head.find('\r'));
  if (length < 4096) status += " " + first_bytes.substr(0, length);
  return {status, body};
}

// Uploads a bundle of `bytes` (the magic, then a pattern seeded by `seed`) a MiB at a time; the
// answer's status line and body.
std::string upload_bundle(int port, uint64_t bytes, char seed) {
  const int fd = connect_to(port);
  if (fd < 0) return "cannot connect";
  const std::string head = "POST /v1/bundles HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nContent-Type: application/octet-stream\r\n"
                           "Content-Length: " + std::to_string(bytes) + "\r\n\r\n";
  std::vector<char> chunk(1 << 20);
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>(seed + i * 131);
  uint64_t sent = 0;
  bool ok = send_all(fd, head.data(), head.size());
  for (uint64_t piece = 0; ok && sent < bytes; ++piece) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), bytes - sent));
    std::memcpy(chunk.data(), &piece, sizeof piece);  // no two pieces alike
    if (piece == 0) std::memcpy(chunk.data(), "JCBUNDL1", 8);
    ok = send_all(fd, chunk.data(), n);
    sent += n;
  }
  auto [status, body] = read_answer(fd);
  ::close(fd);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  int downloaders = 6;
  int64_t mib = 256;
  std::string jobctld = JOBCTLD_PATH;
  if (!jobctl::bench::parse_flags(argc, argv, "jobctl-bench-blob-memory [--downloaders N] [--mib M] [--jobctld PATH]",
                                  {{"--downloaders", &downloaders}, {"--mib", &mib}, {"--jobctld", &jobctld}}))
    return 2;
  const jobctl::bench::ScratchDir scratch("jobctl-bench-blobs");
  if (scratch.path().empty()) return 1;
  const std::string& dir = scratch.path();
  auto started = jobctl::bench::start_jobctld({jobctld, "--listen", "127.0.0.1:0", "--data-dir", dir + "/data"});
  if (!started.child) return 1;
  auto& d = *started.child;
  const int port = started.port;
  std::this_thread::sleep_for(200ms);
  const pid_t pid = d.pid();
  const int64_t rest_rss = status_kb(pid, "VmRSS");
  const uint64_t bytes = static_cast<uint64_t>(mib) << 20;

  const std::string first = upload_bundle(port, bytes, 'a');
  const size_t at = first.find("\"bundle\":\"");
  if (first.rfind("HTTP/1.1 201", 0) != 0 || at == std::string::npos) {
    std::cerr << "the first upload failed: " << first << "\n";
    d.terminate(SIGTERM, 10s);
    return 1;
  }
  const std::string sha = first.substr(at + 10, 64);
  const int64_t after_upload_hwm = status_kb(pid, "VmHWM");
  const int64_t base_rss = status_kb(pid, "VmRSS");

  jobctl::bench::RssSampler sampler(pid, base_rss);
  std::vector<std::string> statuses(static_cast<size_t>(downloaders));
  std::vector<uint64_t> received(static_cast<size_t>(downloaders));
  std::string second;
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < downloaders; ++c)
    threads.emplace_back([&, c] {
      const int fd = connect_to(port);
      if (fd < 0) return;
      const std::string req = "GET /v1/bundles/" + sha + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nConnection: close\r\n\r\n";
      if (send_all(fd, req.data(), req.size())) {
        auto [status, n] = read_answer(fd);
        statuses[static_cast<size_t>(c)] = status.substr(0, 12);
        received[static_cast<size_t>(c)] = n;
      }
      ::close(fd);
    });
  threads.emplace_back([&] { second = upload_bundle(port, bytes, 'b'); });
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::this_thread::sleep_for(100ms);
  const int64_t peak_rss = sampler.stop();
  const int64_t hwm = status_kb(pid, "VmHWM");
  d.terminate(SIGTERM, 10s);

  std::printf("%d downloads of a %lld MiB bundle and one %lld MiB upload at once (%s)\n", downloaders,
              static_cast<long long>(mib), static_cast<long long>(mib), jobctld.c_str());
  std::printf("took %.2f s; downloads:", seconds);
  for (int c = 0; c < downloaders; ++c)
    std::printf(" [%s %.0f MiB]", statuses[static_cast<size_t>(c)].c_str(),
                static_cast<double>(received[static_cast<size_t>(c)]) / (1 << 20));
  std::printf("; upload: %s\n", second.substr(0, 12).c_str());
  std::printf("jobctld RSS at rest: %.1f MB; peak (VmHWM) after the first upload: %.1f MB\n",
              static_cast<double>(rest_rss) / 1024, static_cast<double>(after_upload_hwm) / 1024);
  std::printf("jobctld RSS before the transfers: %.1f MB; peak sampled RSS during: %.1f MB; peak (VmHWM): %.1f MB\n",
              static_cast<double>(base_rss) / 1024, static_cast<double>(peak_rss) / 1024,
              static_cast<double>(hwm) / 1024);
  return 0;
}
