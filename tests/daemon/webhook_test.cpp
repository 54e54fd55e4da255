// Webhooks (daemon/notify/): what is queued with which job event, how a delivery is signed, sent,
// retried with backoff and given up, and what the configuration and the API refuse. The store is
// a real SQLite file and the receiver a real HTTP server on loopback.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.h"
#include "daemon/auth/secret.h"
#include "daemon/notify/delivery_queues.h"
#include "daemon/notify/webhook_dispatcher.h"
#include "daemon/notify/webhook_message.h"
#include "daemon/notify/webhook_options.h"
#include "daemon/notify/webhook_service.h"
#include "tests/daemon/service_support.h"
#include "tests/support/recording_server.h"

namespace jobctl::daemon::notify {
namespace {

using jobctl::daemon::testing::ServiceFixture;
using jobctl::testing::RecordingServer;
using nlohmann::json;

// What a receiver computes, written apart from webhook_message.cpp: HMAC-SHA256 over "<t>.<body>".
std::string receiver_signature(const std::string& secret, const std::string& t, const std::string& body) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const std::string text = t + "." + body;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), reinterpret_cast<const unsigned char*>(text.data()),
       text.size(), mac, &len);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) out += std::string{kHex[mac[i] >> 4], kHex[mac[i] & 15]};
  return out;
}

std::string header(const std::string& head, const std::string& name) {
  const auto at = head.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  const auto start = at + 4 + name.size();
  return head.substr(start, head.find("\r\n", start) - start);
}

WebhookOptions loopback_options() {
  WebhookOptions o;
  o.allow_private_addresses = true;  // the receiver is on 127.0.0.1
  o.retry_initial_s = 10;
  o.max_attempts = 3;
  return o;
}

TEST(WebhookSignature, IsHmacSha256OverTheTimestampAndTheBody) {
  // RFC 4231, test case 2.
  EXPECT_EQ(auth::hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  const std::string body = R"({"event":"succeeded"})";
  EXPECT_EQ(webhook_signature("whsec_k", 1700000000, body),
            "t=1700000000,v1=" + receiver_signature("whsec_k", "1700000000", body));
}

TEST(WebhookOptions, RetriesTripleUpToTheCapAndTheConfigurationIsChecked) {
  WebhookOptions o;
  o.retry_initial_s = 10;
  o.retry_max_s = 100;
  EXPECT_EQ(retry_delay_ms(o, 1), 10000);
  EXPECT_EQ(retry_delay_ms(o, 2), 30000);
  EXPECT_EQ(retry_delay_ms(o, 3), 90000);
  EXPECT_EQ(retry_delay_ms(o, 4), 100000);

  WebhookOptions c;
  ASSERT_TRUE(apply_webhook_config(json{{"webhooks", {{"max_attempts", 4}, {"allow_private_addresses", true}}}}, c));
  EXPECT_EQ(c.max_attempts, 4);
  EXPECT_TRUE(c.allow_private_addresses);
  auto bad = apply_webhook_config(json{{"webhooks", {{"max_attempts", 0}}}}, c);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "webhooks.max_attempts");
  bad = apply_webhook_config(json{{"webhooks", {{"retry_s", 1}}}}, c);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "webhooks.retry_s");
  WebhookOptions d;
  bad = apply_webhook_config(json{{"webhooks", {{"max_concurrent", 2}, {"max_concurrent_per_user", 3}}}}, d);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "webhooks.max_concurrent_per_user");
  d = WebhookOptions{};
  ASSERT_TRUE(apply_webhook_config(json{{"webhooks", {{"connect_timeout_s", 1.5}, {"max_concurrent", 4}}}}, d));
  EXPECT_EQ(d.connect_timeout_s, 1.5);
  EXPECT_EQ(d.max_concurrent, 4);
}

store::DueDelivery due_of(const std::string& owner, int64_t id, int64_t due_ms = 0) {
  store::DueDelivery d;
  d.delivery.id = id;
  d.delivery.next_attempt_ms = due_ms;
  d.webhook.owner = owner;
  return d;
}

TEST(DeliveryQueues, UsersAreServedInTurnAndNoneHoldsMoreThanItsShare) {
  DeliveryQueues q(2);
  std::vector<store::DueDelivery> due;
  for (int64_t i = 1; i <= 5; ++i) due.push_back(due_of("ann", i, 1000));
  due.push_back(due_of("bob", 6, 4000));
  EXPECT_EQ(q.add(due, q.snapshot()), 6);
  EXPECT_EQ(q.add(due, q.snapshot()), 0) << "queued already";
  EXPECT_DOUBLE_EQ(q.lag_s(5000), 4.0);
  // Ann, bob, ann: then ann has her two out and nothing else may go.
  auto a1 = q.take(false), b1 = q.take(false), a2 = q.take(false);
  ASSERT_TRUE(a1 && b1 && a2);
  EXPECT_EQ(a1->webhook.owner, "ann");
  EXPECT_EQ(b1->webhook.owner, "bob");
  EXPECT_EQ(a2->webhook.owner, "ann");
  EXPECT_FALSE(q.take(false)) << "ann's third went while two of hers are out";
  // Bob's next delivery goes at once, whatever ann's wait.
  EXPECT_EQ(q.add({due_of("bob", 7, 4500)}, q.snapshot()), 1);
  auto b2 = q.take(false);
  ASSERT_TRUE(b2);
  EXPECT_EQ(b2->delivery.id, 7);
  // One of ann's done: her next may go; a read taken before it was done does not queue it again.
  const uint64_t before = q.snapshot();
  q.done(*a1);
  EXPECT_EQ(q.add({due_of("ann", a1->delivery.id, 1000)}, before), 0);
  auto a3 = q.take(false);
  ASSERT_TRUE(a3);
  EXPECT_EQ(a3->webhook.owner, "ann");
  q.stop();
  EXPECT_FALSE(q.take(true)) << "stopped";
}

TEST(WebhookAddresses, OnlyPublicAddressesArePublic) {
  const auto v4 = [](const char* text) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, text, &a.sin_addr);
    return client::is_public_address(reinterpret_cast<const sockaddr*>(&a));
  };
  const auto v6 = [](const char* text) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    ::inet_pton(AF_INET6, text, &a.sin6_addr);
    return client::is_public_address(reinterpret_cast<const sockaddr*>(&a));
  };
  for (const char* p : {"127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254",
                        "100.64.0.1", "0.0.0.0", "224.0.0.1"})
    EXPECT_FALSE(v4(p)) << p;
  for (const char* p : {"8.8.8.8", "172.32.0.1", "93.184.216.34"}) EXPECT_TRUE(v4(p)) << p;
  for (const char* p : {"::1", "::", "fe80::1", "fd00::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "ff02::1"})
    EXPECT_FALSE(v6(p)) << p;
  EXPECT_TRUE(v6("2001:4860:4860::8888"));
}

TEST(WebhookService, RefusesBadUrlsUnknownEventsAndPrivateAddresses) {
  ServiceFixture f;
  WebhookService hooks(*f.db, f.clock, WebhookOptions{});
  auto r = hooks.create("alice", "ftp://example.com/x", {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "url");
  r = hooks.create("alice", "https://user:pw@example.com/x", {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "url");
  r = hooks.create("alice", "http://127.0.0.1:9000/x", {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "url");
  EXPECT_NE(r.error().message.find("allow_private_addresses"), std::string::npos) << r.error().message;
  r = hooks.create("alice", "http://169.254.169.254/latest", {});
  ASSERT_FALSE(r);
  r = hooks.create("alice", "https://hooks.example.com/jobs", {"succeeded", "exploded"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "events");
  auto ok = hooks.create("alice", "https://hooks.example.com/jobs", {});
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->events.size(), store::notifiable_events().size());
  EXPECT_TRUE(ok->secret.starts_with("whsec_"));
  // Another user cannot see, read or delete it.
  auto theirs = hooks.list(std::string("bob"));
  ASSERT_TRUE(theirs);
  EXPECT_TRUE(theirs->empty());
  EXPECT_FALSE(hooks.remove(std::string("bob"), ok->id));
  EXPECT_FALSE(hooks.deliveries(std::string("bob"), ok->id, 10));
  EXPECT_TRUE(hooks.remove(std::string("alice"), ok->id));
}

TEST(WebhookService, APerUserLimitHolds) {
  ServiceFixture f;
  WebhookOptions o;
  o.max_webhooks_per_user = 2;
  WebhookService hooks(*f.db, f.clock, o);
  ASSERT_TRUE(hooks.create("alice", "https://a.example.com/1", {}));
  ASSERT_TRUE(hooks.create("alice", "https://a.example.com/2", {}));
  auto third = hooks.create("alice", "https://a.example.com/3", {});
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, ErrorCode::limit_exceeded);
  EXPECT_TRUE(hooks.create("bob", "https://b.example.com/1", {}));
}

TEST(WebhookDeliveries, QueuedWithTheSubscribedEventsOfTheOwnersJobsOnly) {
  ServiceFixture f;
  WebhookService hooks(*f.db, f.clock, loopback_options());
  auto mine = hooks.create("", "http://127.0.0.1:1/hook", {"cancelled"});  // auth off: the owner is ""
  ASSERT_TRUE(mine) << mine.error().message;
  auto other = hooks.create("bob", "http://127.0.0.1:1/bob", {});
  ASSERT_TRUE(other);
  const int64_t a = f.submit();
  const int64_t b = f.submit();
  ASSERT_TRUE(f.svc->cancel_job(a));  // "cancelled": subscribed
  auto due = f.db->due_deliveries(f.clock.now_ms(), 10);
  ASSERT_TRUE(due);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].delivery.job_id, a);
  EXPECT_EQ((*due)[0].webhook.id, mine->id);
  EXPECT_EQ((*due)[0].event.type, "cancelled");
  // Submitting (an event no webhook may subscribe to) queued nothing, and bob's webhook saw none
  // of these jobs (they are not his).
  auto bobs = hooks.deliveries(std::string("bob"), other->id, 10);
  ASSERT_TRUE(bobs);
  EXPECT_TRUE(bobs->empty());
  (void)b;
  // Deleting the webhook deletes its queue.
  ASSERT_TRUE(hooks.remove(std::string(""), mine->id));
  due = f.db->due_deliveries(f.clock.now_ms(), 10);
  ASSERT_TRUE(due);
  EXPECT_TRUE(due->empty());
}

TEST(WebhookDispatcher, SendsASignedDeliveryAndRecordsIt) {
  ServiceFixture f;
  RecordingServer receiver([](const std::string&) { return RecordingServer::response(204, "text/plain", ""); });
  WebhookService hooks(*f.db, f.clock, loopback_options());
  auto hook = hooks.create("", receiver.url() + "/hook", {"cancelled"});
  ASSERT_TRUE(hook) << hook.error().message;
  const int64_t job = f.submit();
  ASSERT_TRUE(f.svc->cancel_job(job));
  WebhookDispatcher dispatcher(*f.db, f.clock, loopback_options());
  EXPECT_EQ(dispatcher.send_due(), 1);
  EXPECT_EQ(dispatcher.send_due(), 0);  // delivered: not sent again

  auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 1u);
  const auto& req = requests[0];
  EXPECT_TRUE(req.head.starts_with("POST /hook HTTP/1.1\r\n")) << req.head;
  EXPECT_EQ(header(req.head, "Jobctl-Event"), "cancelled");
  const std::string signature = header(req.head, "Jobctl-Signature");
  const auto comma = signature.find(",v1=");
  ASSERT_TRUE(signature.starts_with("t=") && comma != std::string::npos) << signature;
  const std::string t = signature.substr(2, comma - 2);
  EXPECT_EQ(signature.substr(comma + 4), receiver_signature(hook->secret, t, req.body));
  EXPECT_EQ(std::stoll(t), f.clock.now_ms() / 1000);
  const json body = json::parse(req.body);
  EXPECT_EQ(body["event"], "cancelled");
  EXPECT_EQ(body["job"]["id"], job);
  EXPECT_EQ(body["job"]["state"], "cancelled");
  EXPECT_EQ(header(req.head, "Jobctl-Delivery"), std::to_string(body["delivery"].get<int64_t>()));

  auto rows = hooks.deliveries(std::string(""), hook->id, 10);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].state, store::DeliveryState::delivered);
  EXPECT_EQ((*rows)[0].attempts, 1);
  EXPECT_EQ((*rows)[0].last_status, 204);
}

TEST(WebhookDispatcher, RetriesWithBackoffThenGivesUp) {
  ServiceFixture f;
  std::atomic<int> answers{0};
  RecordingServer receiver([&answers](const std::string&) {
    ++answers;
    return RecordingServer::response(503, "text/plain", "busy");
  });
  const WebhookOptions o = loopback_options();  // 3 attempts, 10 s then 30 s apart
  WebhookService hooks(*f.db, f.clock, o);
  auto hook = hooks.create("", receiver.url() + "/hook", {});
  ASSERT_TRUE(hook);
  ASSERT_TRUE(f.svc->cancel_job(f.submit()));
  WebhookDispatcher dispatcher(*f.db, f.clock, o);
  EXPECT_EQ(dispatcher.send_due(), 1);
  auto rows = hooks.deliveries(std::string(""), hook->id, 10);
  ASSERT_TRUE(rows && rows->size() == 1u);
  EXPECT_EQ((*rows)[0].state, store::DeliveryState::pending);
  EXPECT_EQ((*rows)[0].last_status, 503);
  EXPECT_EQ((*rows)[0].next_attempt_ms, f.clock.now_ms() + 10000);

  f.clock.advance_ms(9999);
  EXPECT_EQ(dispatcher.send_due(), 0);  // not due yet
  f.clock.advance_ms(1);
  EXPECT_EQ(dispatcher.send_due(), 1);
  rows = hooks.deliveries(std::string(""), hook->id, 10);
  EXPECT_EQ((*rows)[0].attempts, 2);
  EXPECT_EQ((*rows)[0].next_attempt_ms, f.clock.now_ms() + 30000);
  f.clock.advance_ms(30000);
  EXPECT_EQ(dispatcher.send_due(), 1);
  rows = hooks.deliveries(std::string(""), hook->id, 10);
  EXPECT_EQ((*rows)[0].state, store::DeliveryState::failed);
  EXPECT_EQ((*rows)[0].attempts, 3);
  EXPECT_TRUE((*rows)[0].finished_ms.has_value());
  f.clock.advance_ms(3600000);
  EXPECT_EQ(dispatcher.send_due(), 0);  // given up
  EXPECT_EQ(answers.load(), 3);
}

TEST(WebhookDispatcher, WithoutPermissionAPrivateAddressIsNeverConnectedTo) {
  ServiceFixture f;
  RecordingServer receiver([](const std::string&) { return RecordingServer::response(200, "text/plain", ""); });
  // Registered while private addresses were allowed (or through a name that resolves to one):
  // the dispatcher checks the address it is about to connect to.
  WebhookService hooks(*f.db, f.clock, loopback_options());
  auto hook = hooks.create("", receiver.url() + "/hook", {});
  ASSERT_TRUE(hook) << hook.error().message;
  ASSERT_TRUE(f.svc->cancel_job(f.submit()));
  WebhookOptions strict = loopback_options();
  strict.allow_private_addresses = false;
  WebhookDispatcher dispatcher(*f.db, f.clock, strict);
  EXPECT_EQ(dispatcher.send_due(), 1);
  EXPECT_TRUE(receiver.requests().empty());
  auto rows = hooks.deliveries(std::string(""), hook->id, 10);
  ASSERT_TRUE(rows && rows->size() == 1u);
  EXPECT_EQ((*rows)[0].state, store::DeliveryState::pending);
  EXPECT_EQ((*rows)[0].last_status, 0);
  EXPECT_NE((*rows)[0].last_error.find("private"), std::string::npos) << (*rows)[0].last_error;
}

}  // namespace
}  // namespace jobctl::daemon::notify
