// Connection slots cannot be starved (docs/security.md, "Limits"): 10,240 idle connections from 40
// loopback addresses made every other client get 503 for as long as they stayed, since the
// per-client cap counted exact addresses (a client with many addresses, or an IPv6 /64, had as
// many caps) and an idle connection held its slot for the 30 s read timeout. Now the cap counts
// client networks (/24, /64), the last slots are kept for requests with a valid token or worker
// secret (and /healthz), and a connection that sends no request is closed after the short header
// timeout. All of 127/8 is loopback on Linux: each attacking "client" binds its own source address.
#include "tests/security/security_support.h"

namespace jobctl::security {
namespace {

std::string get(const std::string& path, const std::string& host, const std::string& token = "") {
  std::string r = "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n";
  if (!token.empty()) r += "Authorization: Bearer " + token + "\r\n";
  return r + "\r\n";
}

TEST(ConnectionSlots, IdleConnectionsFromManyAddressesLeaveHealthzAndAuthenticatedRequestsServed) {
  TempDir dir;
  const std::string data = dir.file("data");
  const std::string alice = create_token(data, "alice", "user");
  // 200 slots, 20 per client network; a tenth (20) kept back by default. The header timeout is
  // long here so that the idle connections surely outlast the checks on a busy machine.
  Jobctld d(data, [&] {
    auto flags = config_flag(dir, {{"http", {{"max_connections", 200}, {"max_connections_per_client", 20},
                                             {"header_timeout_s", 60}}}});
    flags.push_back("--auth");
    return flags;
  }());
  ASSERT_TRUE(d.ok());

  // Nine /24 networks (127.0.1.0 ... 127.0.9.0), 25 addresses each, one idle connection per
  // address, opened in that order: each network gets 20 slots and its last 5 connections are
  // refused at once; the 180 held are every slot but the kept-back ones.
  constexpr int kNetworks = 9, kAddresses = 25, kPerNetwork = 20;
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int n = 1; n <= kNetworks; ++n)
    for (int a = 1; a <= kAddresses; ++a) {
      idle.push_back(std::make_unique<RawConnection>(d.port(), "127.0." + std::to_string(n) + "." + std::to_string(a)));
      ASSERT_TRUE(idle.back()->connected()) << "cannot connect from 127.0." << n << "." << a;
    }
  [&] {  // the first connection not refused is reported, and the rest not waited for
    for (int n = 1; n <= kNetworks; ++n)
      for (int a = kPerNetwork + 1; a <= kAddresses; ++a) {
        RawConnection& c = *idle[static_cast<size_t>((n - 1) * kAddresses + a - 1)];
        ASSERT_EQ(status_of(c.read_response(10s)), 503)
            << "connection from 127.0." << n << "." << a << " is past its network's cap of " << kPerNetwork;
      }
  }();

  // A client of another network is served on a kept-back slot: /healthz, and a request with a token.
  const std::string host = "127.0.0.1:" + std::to_string(d.port());
  RawConnection health(d.port(), "127.0.0.1");
  ASSERT_TRUE(health.send(get("/healthz", host)));
  EXPECT_EQ(status_of(health.read_response(10s)), 200) << "/healthz while idle connections hold every other slot";
  RawConnection user(d.port(), "127.0.0.1");
  ASSERT_TRUE(user.send(get("/v1/jobs", host, alice)));
  const std::string answer = user.read_response(10s);
  EXPECT_EQ(status_of(answer), 200) << "an authenticated request while idle connections hold every other slot\n"
                                    << answer;
  // An anonymous request on a kept-back slot is not served.
  RawConnection anonymous(d.port(), "127.0.0.1");
  ASSERT_TRUE(anonymous.send(get("/", host)));
  EXPECT_EQ(status_of(anonymous.read_response(10s)), 503) << "an anonymous request took a kept-back slot";

  // The idle connections were all still held: the checks above ran against a full server.
  for (int n = 1; n <= kNetworks; ++n) {
    RawConnection& c = *idle[static_cast<size_t>((n - 1) * kAddresses)];
    EXPECT_FALSE(c.closed_by_peer(10ms)) << "the idle connection from 127.0." << n << ".1 was closed";
  }
}

TEST(ConnectionSlots, AConnectionThatSendsNoRequestIsClosedAfterTheHeaderTimeout) {
  TempDir dir;
  // A long read timeout: the default header timeout (5 s) must close these, not it.
  Jobctld d(dir.file("data"), config_flag(dir, {{"http", {{"read_timeout_s", 300}}}}));
  ASSERT_TRUE(d.ok());
  RawConnection silent(d.port(), "127.0.2.1");
  RawConnection partial(d.port(), "127.0.2.2");
  ASSERT_TRUE(partial.send("GET /healthz HTTP/1.1\r\n"));  // a request line, then nothing
  EXPECT_TRUE(silent.closed_by_peer(60s)) << "a connection that sent nothing held its slot";
  EXPECT_TRUE(partial.closed_by_peer(60s)) << "a connection that never finished its headers held its slot";
}

}  // namespace
}  // namespace jobctl::security
