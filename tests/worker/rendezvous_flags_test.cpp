// A real jobctl-worker's --address and what it tells jobctld of where a gang's other nodes reach
// it: the address it registers (by default the local address of its connection toward jobctld,
// 127.0.0.1 over loopback) and the free port each lease request carries. The stand-in is net/'s
// server over loopback with the two routes the worker calls first; it records what it was sent.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mutex.h"
#include "net/json_body.h"
#include "net/router.h"
#include "net/server.h"
#include "protocol/worker_messages.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace jobctl {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Registers the worker and answers its lease requests with no job, recording both.
class RegistrationRecorder {
 public:
  RegistrationRecorder() {
    router_.add("POST", "/v1/workers/register", [this](const net::HttpRequest& req, const net::PathParams&,
                                                      net::Responder respond) {
      {
        MutexLock lock(mu_);
        auto body = net::parse_json_body(req.body);
        if (body) capabilities_ = body->value("capabilities", json::object());
      }
      protocol::WorkerRegistered r;
      r.worker_id = 5;
      r.worker_secret = "rendezvous-test-secret";
      r.max_lease_wait_s = 1;
      respond(net::json_response(201, protocol::to_json(r)));
    });
    router_.add("POST", "/v1/workers/{id}/lease", [this](const net::HttpRequest& req, const net::PathParams&,
                                                        net::Responder respond) {
      {
        MutexLock lock(mu_);
        ports_.push_back(req.query_param("port").value_or(""));
      }
      net::HttpResponse none;
      none.status = 204;
      none.content_type.clear();
      respond(std::move(none));
    });
    net::ServerOptions o;
    o.port = 0;
    o.shutdown_grace_ms = 1000;
    server_ = std::make_unique<net::HttpServer>(o, router_);
    auto port = server_->start();
    EXPECT_TRUE(port) << (port ? "" : port.error().message);
    if (port) url_ = "http://127.0.0.1:" + std::to_string(*port);
  }
  ~RegistrationRecorder() { server_->stop(); }

  const std::string& url() const { return url_; }
  std::optional<json> capabilities() {
    MutexLock lock(mu_);
    return capabilities_;
  }
  // The `port` of each lease request so far ("" when it had none).
  std::vector<std::string> ports() {
    MutexLock lock(mu_);
    return ports_;
  }

 private:
  net::Router router_;
  std::unique_ptr<net::HttpServer> server_;
  std::string url_;
  Mutex mu_;
  std::optional<json> capabilities_ JOBCTL_GUARDED_BY(mu_);
  std::vector<std::string> ports_ JOBCTL_GUARDED_BY(mu_);
};

// Runs jobctl-worker with `extra` flags until its first lease request, then stops it.
void run_until_first_lease(RegistrationRecorder& daemon, const std::vector<std::string>& extra) {
  testing::TempDir work;
  std::vector<std::string> argv = {testing::env_or_fail("JOBCTL_WORKER"), "--server", daemon.url(), "--name",
                                   "rendezvous", "--work-dir", (work.path() / "jobs").string(), "--device", "cpu",
                                   "--wait-s", "1", "--job-cgroup", "off"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  testing::Process worker(argv);
  ASSERT_TRUE(worker.ok());
  // (The limit only keeps a broken worker from hanging the test.)
  const auto give_up_at = std::chrono::steady_clock::now() + 1min;
  while (daemon.ports().empty() && std::chrono::steady_clock::now() < give_up_at &&
         !worker.wait_for_output("jobctl-worker: stopped", 0ms))
    std::this_thread::sleep_for(20ms);
  ASSERT_FALSE(daemon.ports().empty()) << worker.output();
  const auto status = worker.stop(SIGTERM, 60s);
  ASSERT_TRUE(status) << worker.output();
  EXPECT_TRUE(status->success()) << status->describe() << "\n" << worker.output();
}

bool can_bind(int port) {
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool bound = ::bind(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(s);
  return bound;
}

TEST(WorkerRendezvous, RegistersTheAddressOfItsConnectionAndAsksWithAFreePort) {
  RegistrationRecorder daemon;
  ASSERT_FALSE(daemon.url().empty());
  run_until_first_lease(daemon, {});
  const auto caps = daemon.capabilities();
  ASSERT_TRUE(caps);
  EXPECT_EQ(caps->value("address", std::string()), "127.0.0.1") << caps->dump();
  const std::string port = daemon.ports().front();
  ASSERT_FALSE(port.empty()) << "the lease request carried no port";
  const int n = std::stoi(port);
  EXPECT_GE(n, 1);
  EXPECT_LE(n, 65535);
  EXPECT_TRUE(can_bind(n)) << "port " << n;
}

TEST(WorkerRendezvous, RegistersTheAddressItIsGiven) {
  RegistrationRecorder daemon;
  ASSERT_FALSE(daemon.url().empty());
  run_until_first_lease(daemon, {"--address", "localhost"});
  const auto caps = daemon.capabilities();
  ASSERT_TRUE(caps);
  EXPECT_EQ(caps->value("address", std::string()), "localhost") << caps->dump();
  EXPECT_FALSE(daemon.ports().front().empty());
}

TEST(WorkerRendezvous, AnAddressWithSpacesOrCommasOrNoneIsRefused) {
  for (const std::string bad : {"", "gpu box", "10.0.0.1,10.0.0.2"}) {
    const auto r = testing::run_to_end({testing::env_or_fail("JOBCTL_WORKER"), "--server", "http://127.0.0.1:1",
                                        "--device", "cpu", "--job-cgroup", "off", "--address", bad},
                                       1min);
    EXPECT_TRUE(r.status.exited && r.status.code == 2) << "--address '" << bad << "': " << r.status.describe();
    EXPECT_NE(r.err.find("--address must be a host name or IP address"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace jobctl
