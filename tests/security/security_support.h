// What the security tests share (tests/security, label `security`): jobctld as a real process
// on a port the OS picks, tokens made with `jobctld --create-token`, HTTP through libcurl or a
// raw socket (for requests no well-behaved client sends), and the daemon's memory and CPU read
// from /proc. Every attack is made over real HTTP against a real jobctld.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/http_client.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace jobctl::security {

using jobctl::testing::env_or_fail;
using jobctl::testing::Process;
using jobctl::testing::TempDir;
using nlohmann::json;
using namespace std::chrono_literals;

// Runs a command to its end; its exit status and stdout + stderr.
struct CommandResult {
  jobctl::worker::ExitStatus status;
  std::string out, err;
};
inline CommandResult run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
  CommandResult r;
  auto child = jobctl::worker::ChildProcess::spawn(argv, "", env);
  if (!child) {
    ADD_FAILURE() << "cannot run " << argv.front() << ": " << child.error().message;
    return r;
  }
  r.status = (*child)->read_all(r.out, r.err);
  return r;
}

// A token for `user` with `role`, made in the data directory's database (the daemon may run).
inline std::string create_token(const std::string& data_dir, const std::string& user, const std::string& role) {
  CommandResult r = run_command({env_or_fail("JOBCTLD"), "--create-token", user, "--role", role, "--data-dir", data_dir});
  EXPECT_TRUE(r.status.success()) << r.err;
  std::string token = r.out.substr(0, r.out.find('\n'));
  return token;
}

// jobctld on 127.0.0.1 and a port the OS picks, over `data_dir`. `extra`: more flags;
// `wrapper`: a command to run it under (e.g. {"prlimit", "--nofile=64", "--"}).
class Jobctld {
 public:
  Jobctld(const std::string& data_dir, const std::vector<std::string>& extra = {},
          const std::vector<std::string>& wrapper = {})
      : process_(argv(data_dir, extra, wrapper)) {
    if (!process_.ok()) return;
    json j = jobctl::testing::listening_line(process_, 60s);
    if (j.is_null()) {
      ADD_FAILURE() << "jobctld did not start:\n" << process_.output();
      return;
    }
    url_ = j.value("url", "");
    port_ = j.value("port", 0);
  }
  bool ok() const { return !url_.empty(); }
  const std::string& url() const { return url_; }
  int port() const { return port_; }
  pid_t pid() const { return process_.pid(); }
  Process& process() { return process_; }

 private:
  static std::vector<std::string> argv(const std::string& data_dir, const std::vector<std::string>& extra,
                                       const std::vector<std::string>& wrapper) {
    std::vector<std::string> a = wrapper;
    for (const std::string& s : {env_or_fail("JOBCTLD"), std::string("--listen"), std::string("127.0.0.1:0"),
                                 std::string("--data-dir"), data_dir})
      a.push_back(s);
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  Process process_;
  std::string url_;
  int port_ = 0;
};

// Writes a jobctld configuration file and returns {"--config", path}.
inline std::vector<std::string> config_flag(const TempDir& dir, const json& config) {
  const std::string path = dir.file("jobctld-config.json");
  std::ofstream(path) << config.dump();
  return {"--config", path};
}

// An HTTP client for one caller: an API token and, for a worker, its secret.
inline client::HttpClient http_as(const std::string& url, const std::string& token = "",
                                  const std::string& worker_secret = "") {
  client::HttpClientOptions o;
  o.bearer_token = token;
  o.worker_secret = worker_secret;
  return client::HttpClient(url, o);
}

inline json body_of(const client::HttpResult& r) {
  json j = json::parse(r.body, nullptr, false);
  return j.is_discarded() ? json() : j;
}

// A registered worker: its id and secret.
struct Worker {
  int64_t id = 0;
  std::string secret;
};
inline Worker register_worker(const std::string& url, const std::string& token, const std::string& name) {
  auto http = http_as(url, token);
  auto r = http.request("POST", "/v1/workers/register",
                        json{{"name", name}, {"capabilities", {{"gpus", json::array()}, {"cpu_cores", 2}, {"memory_mb", 4096}}}}.dump());
  EXPECT_TRUE(r && r->status == 201) << (r ? r->body : r.error().message);
  if (!r || r->status != 201) return {};
  const json j = body_of(*r);
  return Worker{j.value("worker_id", int64_t{0}), j.value("worker_secret", std::string())};
}

// Leases a job for the worker, waiting up to `wait_s`; the lease's JSON (null: none).
inline json lease(const std::string& url, const std::string& token, const Worker& w, int wait_s = 10) {
  auto http = http_as(url, token, w.secret);
  auto r = http.request("POST", "/v1/workers/" + std::to_string(w.id) + "/lease?wait_s=" + std::to_string(wait_s),
                        "{}", (wait_s + 10) * 1000L);
  EXPECT_TRUE(r && (r->status == 200 || r->status == 204)) << (r ? r->body : r.error().message);
  if (!r || r->status != 200) return nullptr;
  return body_of(*r);
}

// A small synthetic job: 32 steps an epoch; `epochs` of them.
inline std::string small_spec(const std::string& name, int epochs = 2) {
  return json{{"name", name},
              {"model", {{"kind", "mlp"}, {"hidden", {32}}}},
              {"data", {{"dataset", "synthetic"}, {"samples", 256}, {"features", 16}, {"classes", 4}, {"seed", 3}}},
              {"train", {{"epochs", epochs}, {"batch_size", 8}, {"seed", 5}}},
              {"checkpoint", {{"every_steps", 8}, {"keep", 3}}}}
      .dump();
}

inline int64_t submit(const std::string& url, const std::string& token, const std::string& spec) {
  auto http = http_as(url, token);
  auto r = http.request("POST", "/v1/jobs", spec);
  EXPECT_TRUE(r && r->status == 201) << (r ? r->body : r.error().message);
  return r && r->status == 201 ? body_of(*r).value("id", int64_t{0}) : 0;
}

// ---- /proc

// A line's number from /proc/<pid>/status, in kB ("VmHWM": the peak resident memory).
inline int64_t proc_status_kb(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1));
  return -1;
}

// CPU time the process has used, in seconds (user + system).
inline double cpu_seconds(pid_t pid) {
  std::string text;
  std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/stat"), text);
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i)
    if (i == 14 || i == 15) ticks += std::stod(field);
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// ---- raw HTTP

// A plain TCP connection to 127.0.0.1:port, optionally from another loopback address (another
// "client" as far as per-client limits go).
class RawConnection {
 public:
  explicit RawConnection(int port, const std::string& from = "") {
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
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) close();
  }
  ~RawConnection() { close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return fd_ >= 0; }
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
  // Everything the peer sends until it closes, or until `timeout` passes without a byte.
  std::string read_until_closed(std::chrono::milliseconds timeout) {
    std::string out;
    char buf[8192];
    while (fd_ >= 0) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) break;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  // One response's head and (Content-Length) body, or what came before `timeout`.
  std::string read_response(std::chrono::milliseconds timeout) {
    std::string out;
    char buf[8192];
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (fd_ >= 0) {
      const size_t head_end = out.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        size_t length = 0;
        const size_t cl = out.find("Content-Length: ");
        if (cl != std::string::npos && cl < head_end) length = std::stoul(out.substr(cl + 16));
        if (out.size() >= head_end + 4 + length) return out;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  // Whether the peer closed the connection (within `timeout`).
  bool closed_by_peer(std::chrono::milliseconds timeout) {
    if (closed_) return true;
    read_until_closed(timeout);
    return closed_;
  }

 private:
  int fd_ = -1;
  bool closed_ = false;
};

// The status code of a raw response ("HTTP/1.1 401 ..."), or 0.
inline int status_of(const std::string& response) {
  if (response.size() < 12 || response.rfind("HTTP/1.", 0) != 0) return 0;
  return std::stoi(response.substr(9, 3));
}

// Polls GET /v1/jobs/{id} until `pred` holds (or the timeout); the last answer.
template <class Pred>
json wait_job(const std::string& url, const std::string& token, int64_t id, Pred pred, std::chrono::seconds timeout) {
  auto http = http_as(url, token);
  json last;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = http.request("GET", "/v1/jobs/" + std::to_string(id));
    if (r && r->status == 200) {
      last = body_of(*r);
      if (pred(last)) return last;
    }
    std::this_thread::sleep_for(50ms);
  }
  return last;
}

}  // namespace jobctl::security
