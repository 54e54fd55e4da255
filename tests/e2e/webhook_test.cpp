// Webhooks end to end (docs/notifications.md): jobctld and a jobctl-worker as real processes on
// loopback, a receiver of the test's own. `jobctl webhook add` registers the receiver for the
// user's succeeded and cancelled jobs; a command job runs to success and another is cancelled;
// the receiver gets one POST for each, and verifies its signature with the secret the CLI printed
// the way docs/notifications.md tells a receiver to. `jobctl webhook deliveries` shows both
// delivered.
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/e2e/recovery_support.h"
#include "tests/support/poll.h"
#include "tests/support/recording_server.h"
#include "tests/support/temp_dir.h"

namespace jobctl::e2e {
namespace {

using jobctl::testing::RecordingServer;

// A receiver's check (docs/notifications.md, "Verifying a delivery"): HMAC-SHA256 under the
// secret of "<t>.<body>", hex, equals the signature's v1.
bool signature_valid(const std::string& secret, const std::string& signature, const std::string& body) {
  const auto comma = signature.find(",v1=");
  if (!signature.starts_with("t=") || comma == std::string::npos) return false;
  const std::string text = signature.substr(2, comma - 2) + "." + body;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac, &len);
  std::string hex;
  static const char* kDigits = "0123456789abcdef";
  for (unsigned i = 0; i < len; ++i) hex += std::string{kDigits[mac[i] >> 4], kDigits[mac[i] & 15]};
  return signature.substr(comma + 4) == hex;
}

std::string header(const std::string& head, const std::string& name) {
  const auto at = head.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  const auto start = at + 4 + name.size();
  return head.substr(start, head.find("\r\n", start) - start);
}

TEST(Webhooks, AJobsEndsArePostedSignedToTheUsersReceiver) {
  jobctl::testing::TempDir tmp;
  RecordingServer receiver([](const std::string&) { return RecordingServer::response(200, "text/plain", "ok"); });
  const std::string config = tmp.file("jobctld.json");
  // The receiver is on loopback: a set-up that delivers to it must say so.
  std::ofstream(config) << json{{"webhooks", {{"allow_private_addresses", true}}}}.dump() << "\n";
  Daemon d(tmp.file("data"), "127.0.0.1:0", 10, {"--config", config});
  ASSERT_FALSE(d.url().empty()) << d.process().output();
  const std::string cli = env_or_fail("JOBCTL_CLI");

  const auto added = jobctl::testing::run_to_end({cli, "--server", d.url(), "-o", "json", "webhook", "add", receiver.url() + "/jobs",
                                 "--event", "succeeded", "--event", "cancelled"});
  ASSERT_TRUE(added.success()) << added.describe() << "\n" << added.err;
  const json hook = json::parse(added.out);
  const std::string secret = hook.value("secret", "");
  ASSERT_TRUE(secret.starts_with("whsec_")) << added.out;
  EXPECT_EQ(hook["events"], json::array({"cancelled", "succeeded"}));

  client::ApiClient api(d.url());
  // Waits for a worker that never comes (a GPU this machine has not): cancelled while queued.
  const json waiting{{"name", "never-runs"},
                     {"command", {"/bin/true"}},
                     {"resources", {{"gpu", "H100"}, {"gpus", 1}}},
                     {"placement", {{"mode", "local"}}}};
  auto w = api.submit_job(waiting.dump());
  ASSERT_TRUE(w) << w.error().message;
  const int64_t cancelled_id = (*w)["id"];
  ASSERT_TRUE(api.cancel_job(cancelled_id));

  Process worker(worker_argv(d.url(), "w", tmp.file("work"), {"--allow-commands"}));
  const json quick{{"name", "quick"}, {"command", {"/bin/sh", "-c", "echo done"}}, {"placement", {{"mode", "local"}}}};
  auto q = api.submit_job(quick.dump());
  ASSERT_TRUE(q) << q.error().message;
  const int64_t succeeded_id = (*q)["id"];
  json job = wait_job(api, succeeded_id, is_terminal, std::chrono::seconds(60));
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2);

  ASSERT_TRUE(jobctl::testing::poll_until([&] { return receiver.requests().size() >= 2; }, std::chrono::seconds(30)))
      << "the receiver got " << receiver.requests().size() << " deliveries";
  std::map<std::string, json> by_event;
  for (const auto& r : receiver.requests()) {
    EXPECT_TRUE(r.head.starts_with("POST /jobs HTTP/1.1\r\n")) << r.head;
    EXPECT_TRUE(signature_valid(secret, header(r.head, "Jobctl-Signature"), r.body)) << r.head << r.body;
    EXPECT_FALSE(signature_valid(secret + "x", header(r.head, "Jobctl-Signature"), r.body));
    const json body = json::parse(r.body);
    EXPECT_EQ(header(r.head, "Jobctl-Event"), body.value("event", ""));
    by_event[body.value("event", "")] = body;
  }
  ASSERT_EQ(by_event.size(), 2u);
  EXPECT_EQ(by_event["cancelled"]["job"]["id"], cancelled_id);
  EXPECT_EQ(by_event["cancelled"]["job"]["name"], "never-runs");
  EXPECT_EQ(by_event["succeeded"]["job"]["id"], succeeded_id);
  EXPECT_EQ(by_event["succeeded"]["job"]["state"], "succeeded");

  // What the user sees of them: both delivered at the first attempt.
  ASSERT_TRUE(jobctl::testing::poll_until(
      [&] {
        const auto listed = jobctl::testing::run_to_end({cli, "--server", d.url(), "-o", "json", "webhook", "deliveries",
                                        std::to_string(hook.value("id", 0))});
        if (!listed.success()) return false;
        const json rows = json::parse(listed.out)["deliveries"];
        int delivered = 0;
        for (const auto& row : rows) delivered += row.value("state", "") == "delivered" && row.value("attempts", 0) == 1;
        return delivered == 2;
      },
      std::chrono::seconds(10)));
  const auto table = jobctl::testing::run_to_end({cli, "--server", d.url(), "webhook", "deliveries", std::to_string(hook.value("id", 0))});
  ASSERT_TRUE(table.success()) << table.err;
  EXPECT_NE(table.out.find("HTTP 200"), std::string::npos) << table.out;
  worker.stop(SIGTERM, std::chrono::seconds(20));
}

}  // namespace
}  // namespace jobctl::e2e
