// Uploads and the trust boundary (docs/security.md, "Threat model"): a request is refused on
// its headers before any of its body is read, so clients without credentials cannot make jobctld
// hold their bodies in memory (attack A1: three unauthenticated 900 MiB uploads took it from
// 18 MB to 2.78 GB); a lease holder's checkpoint upload streams to a file, not to memory; and at
// most checkpoints.max_concurrent_uploads are received at once.
#include <atomic>
#include <thread>

#include "tests/security/security_support.h"
#include "worker/checkpoint_transfer.h"
#include "tests/support/checkpoint_bytes.h"

namespace jobctl::security {
namespace {

std::string upload_head(const std::string& host, int64_t job, int64_t step, const std::string& query, uint64_t length,
                        const std::string& extra_headers = "") {
  return "PUT /v1/jobs/" + std::to_string(job) + "/checkpoints/" + std::to_string(step) + "?" + query +
         " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
         std::to_string(length) + "\r\n" + extra_headers + "\r\n";
}

TEST(UploadBeforeAuth, AnUnauthenticatedUploadIsRefusedOnItsHeadersAndCostsNoMemory) {
  TempDir dir;
  Jobctld d(dir.file("data"), {"--auth"});
  ASSERT_TRUE(d.ok());
  const int64_t before_kb = proc_status_kb(d.pid(), "VmHWM");

  // The answer comes before a single body byte is sent.
  constexpr uint64_t kDeclared = uint64_t{1} << 30;
  {
    RawConnection c(d.port());
    ASSERT_TRUE(c.send(upload_head(c.host(), 1, 1, "worker_id=1&epoch=1&crc32c=00000000", kDeclared)));
    const std::string answer = c.read_response(5s);
    EXPECT_EQ(status_of(answer), 401) << answer.substr(0, 300);
    EXPECT_NE(answer.find("WWW-Authenticate"), std::string::npos);
  }

  // Three clients keep sending their declared gigabyte regardless: the daemon reads and drops
  // what arrives for a moment, then closes; its peak memory stays where it was.
  std::atomic<uint64_t> sent{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i)
    clients.emplace_back([&] {
      RawConnection c(d.port());
      if (!c.send(upload_head(c.host(), 1, 1, "worker_id=1&epoch=1&crc32c=00000000", kDeclared))) return;
      const std::string chunk(1 << 20, 'A');
      for (int mib = 0; mib < 300; ++mib) {
        if (!c.send(chunk)) break;
        sent += chunk.size();
      }
    });
  for (auto& t : clients) t.join();
  const int64_t peak_kb = proc_status_kb(d.pid(), "VmHWM");
  std::cerr << "sent " << sent.load() / (1 << 20) << " MiB of refused bodies; jobctld peak RSS " << before_kb / 1024
            << " MB -> " << peak_kb / 1024 << " MB\n";
  EXPECT_LT(peak_kb, 100 * 1024) << "jobctld's peak RSS grew with bodies it should never have read";
  // And it still serves.
  auto health = http_as(d.url()).request("GET", "/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(UploadBeforeAuth, AWorkerTokenWithoutItsWorkersSecretIsRefusedOnItsHeaders) {
  TempDir dir;
  const std::string data = dir.file("data");
  const std::string fleet = create_token(data, "fleet", "worker");
  Jobctld d(data, {"--auth"});
  ASSERT_TRUE(d.ok());
  RawConnection c(d.port());
  ASSERT_TRUE(c.send(upload_head(c.host(), 1, 1, "worker_id=1&epoch=1&crc32c=00000000", uint64_t{1} << 30,
                                 "Authorization: Bearer " + fleet + "\r\n")));
  const std::string answer = c.read_response(5s);
  EXPECT_EQ(status_of(answer), 403) << answer.substr(0, 300);
  EXPECT_NE(answer.find("X-Worker-Secret"), std::string::npos) << answer;
}

// The lease holder's own upload: a 96 MB checkpoint goes to disk as it arrives, is checked and
// stored, and jobctld's memory does not grow by its size.
TEST(UploadStreaming, ALeaseHoldersLargeCheckpointStreamsToDiskNotMemory) {
  TempDir dir;
  const std::string data = dir.file("data");
  const std::string fleet = create_token(data, "fleet", "worker");
  const std::string alice = create_token(data, "alice", "user");
  Jobctld d(data, {"--auth"});
  ASSERT_TRUE(d.ok());
  const std::string spec = small_spec("big-checkpoint");
  const int64_t job = submit(d.url(), alice, spec);
  const Worker w = register_worker(d.url(), fleet, "w");
  const json l = lease(d.url(), fleet, w);
  ASSERT_TRUE(l.is_object());
  const int64_t epoch = l["epoch"];
  const std::string bytes = jobctl::testing::checkpoint_for(spec, 8, 12 * 1000 * 1000);  // 96 MB of state
  ASSERT_GT(bytes.size(), 90u * 1000 * 1000);
  const std::string path = dir.file("big.ckpt");
  std::ofstream(path, std::ios::binary) << bytes;
  const int64_t before_kb = proc_status_kb(d.pid(), "VmHWM");
  // The worker's own upload code (jobctl-worker's CheckpointTransfer).
  worker::TransferOptions to;
  to.server = d.url();
  to.bearer_token = fleet;
  to.worker_secret = w.secret;
  worker::CheckpointTransfer transfer(to);
  auto st = transfer.upload(job, 8, w.id, epoch, path);
  ASSERT_TRUE(st) << st.error().message;
  auto listed = transfer.list(job);
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].bytes, static_cast<int64_t>(bytes.size()));
  const int64_t peak_kb = proc_status_kb(d.pid(), "VmHWM");
  std::cerr << "jobctld peak RSS " << before_kb / 1024 << " MB -> " << peak_kb / 1024 << " MB around a "
            << bytes.size() / 1000000 << " MB upload\n";
  EXPECT_LT(peak_kb - before_kb, 48 * 1024) << "the upload was held in memory";
}

TEST(UploadStreaming, AtMostTheConfiguredNumberOfUploadsAreReceivedAtOnce) {
  TempDir dir;
  const std::string data = dir.file("data");
  Jobctld d(data, config_flag(dir, {{"checkpoints", {{"max_concurrent_uploads", 1}}}}));
  ASSERT_TRUE(d.ok());
  const std::string spec = small_spec("two-uploads");
  const int64_t job = submit(d.url(), "", spec);
  const Worker w = register_worker(d.url(), "", "w");
  const json l = lease(d.url(), "", w);
  ASSERT_TRUE(l.is_object());
  const std::string query = "worker_id=" + std::to_string(w.id) + "&epoch=" + std::to_string(l["epoch"].get<int64_t>()) +
                            "&crc32c=00000000";
  const std::string secret = "X-Worker-Secret: " + w.secret + "\r\n";
  // The first upload holds the only slot while its body is still coming.
  RawConnection first(d.port());
  ASSERT_TRUE(first.send(upload_head(first.host(), job, 8, query, 1 << 20, secret)));
  ASSERT_TRUE(first.send(std::string(1000, 'x')));
  std::this_thread::sleep_for(300ms);
  RawConnection second(d.port());
  ASSERT_TRUE(second.send(upload_head(second.host(), job, 16, query, 1 << 20, secret)));
  const std::string busy = second.read_response(5s);
  EXPECT_EQ(status_of(busy), 503) << busy;
  EXPECT_NE(busy.find("Retry-After"), std::string::npos) << busy;
  // Once the first is over, the slot is free again.
  first.close();
  std::this_thread::sleep_for(300ms);
  RawConnection third(d.port());
  ASSERT_TRUE(third.send(upload_head(third.host(), job, 16, query, 10, secret) + "0123456789"));
  const std::string answer = third.read_response(5s);
  EXPECT_EQ(status_of(answer), 400) << answer;  // admitted and read: its checksum is wrong
  EXPECT_NE(answer.find("crc32c"), std::string::npos) << answer;
}

}  // namespace
}  // namespace jobctl::security
