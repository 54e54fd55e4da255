// Webhooks against a real jobctld with auth on (docs/notifications.md, docs/security.md): a user
// cannot aim jobctld's requests inside the operator's network (server-side request forgery) by
// default, whether the URL names an internal address or a name that resolves to one; and one
// user's webhooks are invisible to another.
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

}  // namespace
}  // namespace jobctl::security
