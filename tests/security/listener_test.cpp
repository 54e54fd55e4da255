// The listener under abuse (docs/security.md, "Limits"):
//   A5  out of file descriptors (400 idle connections against a limit of 256), the accept loop
//       spun at 98% CPU and /healthz timed out: accepting now backs off, connections are capped
//       per client and in total, and a kept-alive connection that stays idle is closed;
//   A13 "Transfer-Encoding: chunked, identity" was taken as no body and the body parsed as a
//       second request (a desync behind a proxy): now a 400 and the connection closes;
//   and a method a route does not allow is answered 405 only after authentication.
#include "tests/security/security_support.h"

namespace jobctl::security {
namespace {

TEST(Listener, OutOfFileDescriptorsTheAcceptLoopBacksOffInsteadOfSpinning) {
  TempDir dir;
  // 64 descriptors: far fewer than the connection caps, so that it is the descriptors that run
  // out. Connections that never send a request are closed after the read timeout.
  Jobctld d(dir.file("data"), {"--read-timeout-s", "3"}, {"prlimit", "--nofile=64:64", "--"});
  ASSERT_TRUE(d.ok());
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 120; ++i) idle.push_back(std::make_unique<RawConnection>(d.port()));
  // The daemon has taken what it can and hit the limit.
  EXPECT_TRUE(d.process().wait_for_output("cannot accept connections", 5s)) << d.process().output();
  // Idle, it should use next to nothing; the busy loop this replaces took 33-57% of a core here
  // (98% on a quieter machine).
  const double cpu0 = cpu_seconds(d.pid());
  std::this_thread::sleep_for(2s);
  const double busy = (cpu_seconds(d.pid()) - cpu0) / 2;
  std::cerr << "jobctld CPU while out of descriptors: " << busy * 100 << "% of a core\n";
  EXPECT_LT(busy, 0.1) << "the accept loop spins while out of file descriptors";
  // Once clients go away, the daemon serves again.
  idle.clear();
  const auto t0 = std::chrono::steady_clock::now();
  long status = 0;
  while (std::chrono::steady_clock::now() - t0 < 20s && status != 200) {
    client::HttpClientOptions o;
    o.timeout_ms = 3000;
    auto r = client::HttpClient(d.url(), o).request("GET", "/healthz");
    if (r) status = r->status;
  }
  EXPECT_EQ(status, 200) << "/healthz did not answer once the idle connections timed out";
}

TEST(Listener, ConnectionsAreCappedPerClientSoOthersAreStillServed) {
  TempDir dir;
  Jobctld d(dir.file("data"));  // the default cap: 256 connections per client address
  ASSERT_TRUE(d.ok());
  std::vector<std::unique_ptr<RawConnection>> hog;
  for (int i = 0; i < 300; ++i) hog.push_back(std::make_unique<RawConnection>(d.port(), "127.0.0.1"));
  // Accepted in the order they connected: the first 256 are held, the rest refused at once.
  for (size_t i = 256; i < hog.size(); ++i)
    EXPECT_EQ(status_of(hog[i]->read_response(3s)), 503) << "connection " << i << " past the per-client cap";
  for (size_t i = 0; i < 3; ++i) EXPECT_FALSE(hog[i]->closed_by_peer(100ms)) << "connection " << i;
  // Another client network is served meanwhile.
  RawConnection other(d.port(), "127.0.1.2");  // another /24: another client network
  ASSERT_TRUE(other.connected());
  ASSERT_TRUE(other.send("GET /healthz HTTP/1.1\r\nHost: " + other.host() + "\r\n\r\n"));
  EXPECT_EQ(status_of(other.read_response(5s)), 200);
}

TEST(Listener, AKeptAliveConnectionThatStaysIdleIsClosed) {
  TempDir dir;
  // The read timeout an hour away: only the idle timeout can close it within the wait.
  Jobctld d(dir.file("data"), config_flag(dir, {{"http", {{"idle_timeout_s", 1}, {"read_timeout_s", 3600}}}}));
  ASSERT_TRUE(d.ok());
  RawConnection c(d.port());
  ASSERT_TRUE(c.send("GET /healthz HTTP/1.1\r\nHost: " + c.host() + "\r\n\r\n"));
  EXPECT_EQ(status_of(c.read_response(5s)), 200);
  EXPECT_TRUE(c.closed_by_peer(60s)) << "a kept-alive connection outlived the idle timeout";
}

TEST(RequestFraming, ATransferEncodingThatDoesNotEndInChunkedIsRefusedNotSmuggled) {
  TempDir dir;
  Jobctld d(dir.file("data"));
  ASSERT_TRUE(d.ok());
  for (const std::string te : {"chunked, identity", "identity", "gzip, chunked, chunked"}) {
    RawConnection c(d.port());
    ASSERT_TRUE(c.send("POST /v1/jobs HTTP/1.1\r\nHost: " + c.host() + "\r\nContent-Type: application/json\r\n"
                       "Transfer-Encoding: " + te + "\r\n\r\n"
                       "GET /healthz HTTP/1.1\r\nHost: " + c.host() + "\r\n\r\n"));
    const std::string all = c.read_until_closed(5s);
    EXPECT_EQ(status_of(all), 400) << te << ": " << all;
    EXPECT_NE(all.find("Transfer-Encoding"), std::string::npos) << all;
    EXPECT_EQ(all.find("HTTP/1.1", 8), std::string::npos) << "a second response: the body was read as a request\n" << all;
  }
  // Content-Length and Transfer-Encoding together: refused too.
  RawConnection c(d.port());
  ASSERT_TRUE(c.send("POST /v1/jobs HTTP/1.1\r\nHost: " + c.host() + "\r\nContent-Type: application/json\r\nContent-Length: 5\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"));
  EXPECT_EQ(status_of(c.read_until_closed(5s)), 400);
}

TEST(RequestFraming, AMethodARouteDoesNotAllowIs405OnlyAfterAuthentication) {
  TempDir dir;
  const std::string data = dir.file("data");
  const std::string alice = create_token(data, "alice", "user");
  Jobctld d(data, {"--auth"});
  ASSERT_TRUE(d.ok());
  auto anonymous = http_as(d.url()).request("DELETE", "/v1/jobs");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401) << anonymous->body;
  auto user = http_as(d.url(), alice).request("DELETE", "/v1/jobs");
  ASSERT_TRUE(user);
  EXPECT_EQ(user->status, 405) << user->body;
}

}  // namespace
}  // namespace jobctl::security
