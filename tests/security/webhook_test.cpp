// Webhooks against a real jobctld with auth on (docs/notifications.md, docs/security.md): a user
// cannot aim jobctld's requests inside the operator's network (server-side request forgery) by
// default, whether the URL names an internal address or a name that resolves to one; one
// user's webhooks are invisible to another; and one user's receivers that never answer do not
// delay another user's deliveries.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <iostream>

#include "tests/support/recording_server.h"
#include "tests/security/security_support.h"

namespace jobctl::security {
namespace {

struct WebhookWorld {
  explicit WebhookWorld(const json& webhooks_config = json::object())
      : data(dir.file("data")),
        ann(create_token(data, "ann", "user")),
        bob(create_token(data, "bob", "user")),
        d(data, with_auth(config_flag(dir, json{{"webhooks", webhooks_config}}))) {}
  static std::vector<std::string> with_auth(std::vector<std::string> flags) {
    flags.push_back("--auth");
    return flags;
  }
  TempDir dir;
  std::string data, ann, bob;
  Jobctld d;
};

client::HttpResult add_webhook(const std::string& url, const std::string& token, const std::string& target) {
  auto r = http_as(url, token).request("POST", "/v1/webhooks", json{{"url", target}}.dump());
  EXPECT_TRUE(r) << r.error().message;
  return r ? *r : client::HttpResult{};
}

TEST(WebhookTargets, InternalAddressesAreRefusedAndOneUsersWebhooksAreTheirs) {
  WebhookWorld world;
  ASSERT_TRUE(world.d.ok());
  // The cloud metadata service, jobctld itself, private networks, IPv6 loopback, a mapped IPv4.
  for (const std::string& target : std::vector<std::string>
       {"http://169.254.169.254/latest/meta-data/", world.d.url() + "/v1/jobs", "http://10.0.0.5:9200/",
        "http://192.168.1.1/", "http://[::1]:8080/", "http://[::ffff:127.0.0.1]/", "http://localhost:8080/",
        "file:///etc/passwd", "gopher://127.0.0.1:6379/"}) {
    const auto r = add_webhook(world.d.url(), world.ann, target);
    EXPECT_EQ(r.status, 400) << target << ": " << r.body;
    EXPECT_EQ(error_field(r), "url") << target;
  }
  const auto listed = http_as(world.d.url(), world.ann).request("GET", "/v1/webhooks");
  ASSERT_TRUE(listed);
  EXPECT_TRUE(body_of(*listed)["webhooks"].empty()) << listed->body;

  // A public receiver is accepted; bob neither sees, reads nor deletes ann's.
  const auto made = add_webhook(world.d.url(), world.ann, "https://hooks.example.com/ann");
  ASSERT_EQ(made.status, 201) << made.body;
  const int64_t id = body_of(made).value("id", int64_t{0});
  auto bob = http_as(world.d.url(), world.bob);
  const auto bobs = bob.request("GET", "/v1/webhooks");
  ASSERT_TRUE(bobs);
  EXPECT_TRUE(body_of(*bobs)["webhooks"].empty()) << bobs->body;
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/v1/webhooks/" + std::to_string(id) + "/deliveries"},
           {"POST", "/v1/webhooks/" + std::to_string(id) + "/delete"}}) {
    const auto r = bob.request(method, path, method == "POST" ? "{}" : "");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << method << " " << path << ": " << r->body;
  }
  const auto still = http_as(world.d.url(), world.ann).request("GET", "/v1/webhooks");
  ASSERT_TRUE(still);
  EXPECT_EQ(body_of(*still)["webhooks"].size(), 1u) << still->body;
  // The listing never shows the secret.
  EXPECT_EQ(still->body.find("whsec_"), std::string::npos) << still->body;
  // Without a token: refused on the headers.
  const auto anonymous = http_as(world.d.url()).request("GET", "/v1/webhooks");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);
}

// A receiver that never answers: a listening socket nobody accepts on. The kernel completes the
// connections (up to the backlog) and takes the requests; no answer ever comes.
class DeadReceiver {
 public:
  DeadReceiver() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 128);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~DeadReceiver() { ::close(fd_); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A job of `token`'s user that waits for a GPU no worker has, cancelled: its `cancelled` event
// queues a delivery to each of the user's webhooks.
void cancel_a_job(const std::string& url, const std::string& token, const std::string& name) {
  const int64_t id = submit(url, token, json{{"name", name},
                                             {"model", {{"kind", "mlp"}, {"hidden", {8}}}},
                                             {"data", {{"dataset", "synthetic"}, {"samples", 64}, {"features", 4}, {"classes", 2}}},
                                             {"train", {{"epochs", 1}, {"batch_size", 8}}},
                                             {"resources", {{"gpu", "H100"}, {"gpus", 1}}},
                                             {"placement", {{"mode", "local"}}}}
                                            .dump());
  ASSERT_GT(id, 0);
  auto r = http_as(url, token).request("POST", "/v1/jobs/" + std::to_string(id) + "/cancel", "{}");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : r.error().message);
}

TEST(WebhookIsolation, OneUsersDeadReceiversDoNotDelayAnotherUsersDelivery) {
  // Each attempt at a dead receiver hangs for the whole timeout_s; no retry comes in the test.
  WebhookWorld world(json{{"allow_private_addresses", true}, {"timeout_s", 1.5}, {"retry_initial_s", 600}});
  ASSERT_TRUE(world.d.ok());
  DeadReceiver dead;
  for (int i = 0; i < 20; ++i) {
    auto r = http_as(world.d.url(), world.ann)
                 .request("POST", "/v1/webhooks", json{{"url", dead.url() + std::to_string(i)}, {"events", {"cancelled"}}}.dump());
    ASSERT_TRUE(r && r->status == 201) << (r ? r->body : r.error().message);
  }
  jobctl::testing::RecordingServer alive([](const std::string&) {
    return jobctl::testing::RecordingServer::response(200, "text/plain", "ok");
  });
  auto made = http_as(world.d.url(), world.bob)
                  .request("POST", "/v1/webhooks", json{{"url", alive.url() + "/bob"}, {"events", {"cancelled"}}}.dump());
  ASSERT_TRUE(made && made->status == 201) << (made ? made->body : made.error().message);

  // Ann's 20 deliveries are due first, and are being sent, when bob's job ends.
  cancel_a_job(world.d.url(), world.ann, "ann-job");
  std::this_thread::sleep_for(1200ms);
  const auto start = std::chrono::steady_clock::now();
  cancel_a_job(world.d.url(), world.bob, "bob-job");
  const bool arrived = jobctl::testing::poll_until([&] { return !alive.requests().empty(); }, std::chrono::seconds(45),
                                                   std::chrono::milliseconds(20));
  const double delay_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cerr << "bob's delivery arrived " << delay_s << " s after his job ended, with ann's 20 webhooks at a receiver "
            << "that never answers (" << (arrived ? "arrived" : "never arrived") << ")\n";
  ASSERT_TRUE(arrived) << "bob's delivery never came";
  // Ann's receivers hang 20 x 1.5 s one after another when her deliveries hold the one sender:
  // bob's comes within the half-second poll and the send.
  EXPECT_LT(delay_s, 2.0) << "ann's dead receivers delayed bob's delivery";
  EXPECT_NE(alive.requests().front().body.find("bob-job"), std::string::npos) << alive.requests().front().body;

  // The lag is a metric: ann's deliveries past their two senders wait, and it shows.
  auto m = http_as(world.d.url(), create_token(world.data, "root", "admin")).request("GET", "/metrics");
  ASSERT_TRUE(m && m->status == 200) << (m ? m->body : m.error().message);
  const auto at = m->body.find("\njobctl_webhook_delivery_lag_seconds ");
  ASSERT_NE(at, std::string::npos) << m->body;
  const double lag = std::atof(m->body.c_str() + at + 37);
  std::cerr << "jobctl_webhook_delivery_lag_seconds " << lag << "\n";
  EXPECT_GT(lag, 0.5) << "ann's waiting deliveries do not show as lag";
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    TempDir tmp;
    const std::string path = tmp.file("metrics.txt");
    std::ofstream(path) << m->body;
    EXPECT_EQ(std::system(("promtool check metrics < " + path + " > /dev/null 2>&1").c_str()), 0) << m->body;
  }
}

}  // namespace
}  // namespace jobctl::security
