// Blobs (docs/security.md, "Threat model"): a code bundle upload streams to disk and is hashed
// from the file, a blob download is sent from its file a piece at a time, at most
// checkpoints.max_concurrent_downloads at once (attack: one 256 MiB bundle upload took jobctld
// from 49 to 548 MiB, six concurrent downloads of it to 2.5 GB); bundles count against a
// per-user quota and are deleted once no job names them for the retention period.
#include <atomic>
#include <filesystem>
#include <thread>

#include <openssl/evp.h>

#include "tests/security/security_support.h"
#include "tests/support/poll.h"

namespace jobctl::security {
namespace {

// A body jobctld takes for a bundle: the magic, then `size` bytes in all.
std::string bundle_bytes(size_t size, char fill) {
  std::string b(size, fill);
  b.replace(0, 8, "JCBUNDL1");
  for (size_t i = 8; i < size; i += 4096) b[i] = static_cast<char>(i * 31);  // not one repeated byte
  return b;
}

std::string sha256_hex(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kDigits[md[i] >> 4]);
    out.push_back(kDigits[md[i] & 15]);
  }
  return out;
}

std::optional<client::HttpResult> post_bundle(const std::string& url, const std::string& token,
                                              const std::string& bytes) {
  client::HttpClientOptions o;
  o.bearer_token = token;
  client::HttpClient http(url, o);
  auto r = http.request("POST", "/v1/bundles", bytes, 120'000, {"Content-Type: application/octet-stream"});
  if (!r) {
    ADD_FAILURE() << r.error().message;
    return std::nullopt;
  }
  return *r;
}

TEST(BlobStreaming, ALargeBundleIsUploadedAndDownloadedWithoutHoldingIt) {
  TempDir dir;
  Jobctld d(dir.file("data"));
  ASSERT_TRUE(d.ok());
  const std::string bytes = bundle_bytes(size_t{64} << 20, 'a');
  const std::string sha = sha256_hex(bytes);
  const int64_t before_kb = proc_status_kb(d.pid(), "VmHWM");
  auto up = post_bundle(d.url(), "", bytes);
  ASSERT_TRUE(up);
  ASSERT_EQ(up->status, 201) << up->body;
  EXPECT_EQ(body_of(*up).value("bundle", ""), sha) << "hashed as it was stored";
  EXPECT_EQ(body_of(*up).value("bytes", int64_t{0}), static_cast<int64_t>(bytes.size()));
  const int64_t after_upload_kb = proc_status_kb(d.pid(), "VmHWM");
  // Three downloads at once: each is sent from the file.
  std::vector<std::thread> clients;
  std::atomic<int> whole{0};
  for (int i = 0; i < 3; ++i)
    clients.emplace_back([&] {
      auto r = http_as(d.url()).request("GET", "/v1/bundles/" + sha, "", 120'000);
      if (r && r->status == 200 && r->body.size() == bytes.size() && r->body == bytes) whole.fetch_add(1);
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(whole.load(), 3);
  const int64_t peak_kb = proc_status_kb(d.pid(), "VmHWM");
  std::cerr << "jobctld peak RSS " << before_kb / 1024 << " MB -> " << after_upload_kb / 1024 << " MB after a "
            << (bytes.size() >> 20) << " MiB bundle upload -> " << peak_kb / 1024 << " MB after 3 downloads\n";
  // Holding the blob once costs 64 MiB; these bounds leave room for buffers and allocator slack.
  EXPECT_LT(after_upload_kb - before_kb, 32 * 1024) << "the upload was held in memory";
  EXPECT_LT(peak_kb - before_kb, 40 * 1024) << "the downloads were held in memory";
}

TEST(BlobStreaming, DownloadsPastTheCapAreAnswered503WithRetryAfter) {
  TempDir dir;
  Jobctld d(dir.file("data"), config_flag(dir, json{{"checkpoints", {{"max_concurrent_downloads", 1}}}}));
  ASSERT_TRUE(d.ok());
  const std::string bytes = bundle_bytes(size_t{32} << 20, 'b');
  auto up = post_bundle(d.url(), "", bytes);
  ASSERT_TRUE(up && up->status == 201);
  const std::string sha = body_of(*up).value("bundle", "");
  // A client that asks and does not read: the answer fills the socket buffers and stays in flight.
  RawConnection slow(d.port());
  ASSERT_TRUE(slow.connected());
  slow.send("GET /v1/bundles/" + sha + " HTTP/1.1\r\nHost: " + slow.host() + "\r\n\r\n");
  // Its answer has begun (the slot is held): what fits in the socket buffers, then it waits.
  const std::string begun = slow.read_response(500ms);
  ASSERT_EQ(begun.rfind("HTTP/1.1 200", 0), 0u) << begun.substr(0, 200);
  ASSERT_LT(begun.size(), bytes.size()) << "the whole blob fit in the socket buffers";
  std::string busy;
  jobctl::testing::poll_until([&] {
    RawConnection second(d.port());
    second.send("GET /v1/bundles/" + sha + " HTTP/1.1\r\nHost: " + second.host() + "\r\nConnection: close\r\n\r\n");
    std::string head = second.read_response();
    if (head.rfind("HTTP/1.1 503", 0) == 0) busy = head;
    return !busy.empty();
  });
  ASSERT_FALSE(busy.empty()) << "a second download while one is in flight was not refused";
  EXPECT_NE(busy.find("\"code\":\"unavailable\""), std::string::npos) << busy;
  EXPECT_NE(busy.find("max_concurrent_downloads"), std::string::npos) << busy;
  EXPECT_NE(busy.find("Retry-After: 1"), std::string::npos) << busy;
  slow.close();
  // The slot comes back once that connection is gone.
  const bool served = jobctl::testing::poll_until([&] {
    auto r = http_as(d.url()).request("GET", "/v1/bundles/" + sha, "", 60'000);
    return r && r->status == 200 && r->body == bytes;
  });
  EXPECT_TRUE(served);
}

TEST(BundleQuota, AUserPastTheQuotaIsRefusedNamingItAndOthersAreNot) {
  TempDir dir;
  const std::string data = dir.file("data");
  const std::string alice = create_token(data, "alice", "user");
  const std::string bob = create_token(data, "bob", "user");
  Jobctld d(data, [&] {
    auto f = config_flag(dir, json{{"bundles", {{"quota_bytes_per_user", 3000}}}});
    f.push_back("--auth");
    return f;
  }());
  ASSERT_TRUE(d.ok());
  const std::string one = bundle_bytes(1200, '1'), two = bundle_bytes(1200, '2'), three = bundle_bytes(1200, '3');
  auto r = post_bundle(d.url(), alice, one);
  ASSERT_TRUE(r && r->status == 201) << (r ? r->body : "");
  r = post_bundle(d.url(), alice, two);
  ASSERT_TRUE(r && r->status == 201) << (r ? r->body : "");
  r = post_bundle(d.url(), alice, one);
  EXPECT_TRUE(r && r->status == 201) << "the same bytes again count once";
  r = post_bundle(d.url(), alice, three);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429) << r->body;
  EXPECT_EQ(error_field(*r), "bundles.quota_bytes_per_user") << r->body;
  EXPECT_NE(r->body.find("3000"), std::string::npos) << r->body;
  EXPECT_EQ(http_as(d.url(), alice).request("GET", "/v1/bundles/" + sha256_hex(three))->status, 404)
      << "a refused bundle is not stored";
  r = post_bundle(d.url(), bob, three);
  EXPECT_TRUE(r && r->status == 201) << "another user's quota is their own";
}

TEST(BundleRetention, AnUnusedBundleIsDeletedAndOneAQueuedJobNamesIsKept) {
  TempDir dir;
  const std::string data = dir.file("data");
  auto config = config_flag(dir, json{{"bundles", {{"retention_s", 1}}}, {"placement", {{"enabled", false}}}});
  auto flags = config;
  std::string kept_sha, unused_sha, stray_sha;
  {
    Jobctld d(data, flags);
    ASSERT_TRUE(d.ok());
    auto kept = post_bundle(d.url(), "", bundle_bytes(2000, 'k'));
    auto unused = post_bundle(d.url(), "", bundle_bytes(2000, 'u'));
    ASSERT_TRUE(kept && kept->status == 201 && unused && unused->status == 201);
    kept_sha = body_of(*kept).value("bundle", "");
    unused_sha = body_of(*unused).value("bundle", "");
    // A command job that names one of them stays queued: no worker is there to run it.
    auto job = http_as(d.url()).request(
        "POST", "/v1/jobs", json{{"name", "uses-bundle"}, {"command", {"python3", "train.py"}}, {"bundle", kept_sha}}.dump());
    ASSERT_TRUE(job && job->status == 201) << (job ? job->body : "");
    const bool deleted = jobctl::testing::poll_until([&] {  // the pass runs every second with a 1 s retention
      return http_as(d.url()).request("GET", "/v1/bundles/" + unused_sha)->status == 404;
    });
    EXPECT_TRUE(deleted) << "an unreferenced bundle outlived its retention";
    std::this_thread::sleep_for(2500ms);  // two more passes
    EXPECT_EQ(http_as(d.url()).request("GET", "/v1/bundles/" + kept_sha)->status, 200)
        << "a bundle a queued job names was deleted";
    EXPECT_FALSE(std::filesystem::exists(data + "/bundles/job-0/" + unused_sha + ".bundle"));
  }
  // A crash between a sweep's rows and its file leaves a file without rows: the next start
  // adopts it, and the sweep after deletes it.
  const std::string stray = bundle_bytes(3000, 's');
  stray_sha = sha256_hex(stray);
  std::ofstream(data + "/bundles/job-0/" + stray_sha + ".bundle", std::ios::binary) << stray;
  Jobctld d(data, flags);
  ASSERT_TRUE(d.ok());
  const bool deleted = jobctl::testing::poll_until([&] { return !std::filesystem::exists(data + "/bundles/job-0/" + stray_sha + ".bundle"); });
  EXPECT_TRUE(deleted) << "a bundle file without rows was never deleted";
  EXPECT_EQ(http_as(d.url()).request("GET", "/v1/bundles/" + kept_sha)->status, 200);
}

}  // namespace
}  // namespace jobctl::security
