// The checkpoint blob store and service: uploads are verified, fenced by lease epoch,
// stored durably and pruned to the spec's keep; downloads return the stored bytes; a finished
// job's checkpoints are removed; the lease grant names the newest one; the HTTP routes refuse bad
// input with a clear 4xx and change nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "base/crc32c.h"
#include "daemon/http/checkpoint_routes.h"
#include "net/json_body.h"
#include "daemon/jobs/checkpoint_service.h"
#include "daemon/store/blob_store.h"
#include "tests/daemon/service_support.h"

namespace jobctl::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using jobs::CheckpointUpload;
using jobs::LeaseRef;

std::string blob_bytes(int64_t step, size_t size = 4096) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>((i * 131 + static_cast<size_t>(step)) & 0xff);
  return s;
}

struct CheckpointFixture : testing::ServiceFixture {
  CheckpointFixture()
      : blobs((dir.path() / "checkpoints").string()), ckpts(*db, blobs, clock, jobs::CheckpointOptions{}) {}

  // A job leased to a fresh worker: (job, worker, epoch).
  std::tuple<int64_t, int64_t, int64_t> leased_job(const std::string& keep = "2") {
    const int64_t job = submit(testing::mlp_spec(R"(,"checkpoint":{"every_steps":10,"keep":)" + keep + "}"));
    const int64_t w = register_worker();
    auto g = lease_now(w);
    EXPECT_TRUE(g && *g);
    return {job, w, (g && *g) ? (*g)->epoch : 0};
  }

  Expected<jobs::CheckpointRow> put(int64_t job, int64_t step, jobs::LeaseRef lease, const std::string& bytes,
                                       std::optional<uint32_t> crc = std::nullopt) {
    jobs::CheckpointUpload up;
    up.job_id = job;
    up.step = step;
    up.lease = lease;
    up.crc32c = crc ? *crc : crc32c::value(bytes.data(), bytes.size());
    up.bytes = bytes;
    return ckpts.put(up);
  }

  size_t files_of(int64_t job) {
    size_t n = 0;
    std::error_code ec;
    for (fs::directory_iterator it(dir.path() / "checkpoints" / ("job-" + std::to_string(job)), ec), end;
         !ec && it != end; it.increment(ec))
      ++n;
    return n;
  }

  store::BlobStore blobs;
  jobs::CheckpointService ckpts;
};

TEST(BlobStore, WritesAtomicallyReadsAndRemoves) {
  jobctl::testing::TempDir dir;
  store::BlobStore b((dir.path() / "blobs").string());
  ASSERT_TRUE(b.write(7, "a.ckpt", "hello"));
  ASSERT_TRUE(b.write(7, "a.ckpt", "hello again"));  // replaced whole
  auto r = b.read(7, "a.ckpt");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "hello again");
  EXPECT_FALSE(fs::exists(b.path_of(7, "a.ckpt") + ".tmp"));
  EXPECT_EQ(b.job_ids(), std::vector<int64_t>{7});
  EXPECT_EQ(b.names(7), std::vector<std::string>{"a.ckpt"});
  EXPECT_EQ(b.read(7, "missing").error().code, ErrorCode::not_found);
  EXPECT_EQ(b.write(7, "../escape", "x").error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(b.write(7, ".hidden", "x").error().code, ErrorCode::invalid_argument);
  ASSERT_TRUE(b.remove(7, "a.ckpt"));
  ASSERT_TRUE(b.remove(7, "a.ckpt"));  // absent is fine
  ASSERT_TRUE(b.remove_job(7));
  EXPECT_TRUE(b.job_ids().empty());
}

TEST(CheckpointService, StoresVerifiedUploadsAndKeepsTheNewestK) {
  CheckpointFixture f;
  auto [job, w, epoch] = f.leased_job("2");
  for (int64_t step : {10, 20, 30}) {
    auto r = f.put(job, step, {w, epoch}, blob_bytes(step));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->bytes, 4096);
  }
  auto list = f.ckpts.list(job);
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 2u);  // keep = 2
  EXPECT_EQ((*list)[0].step, 30);
  EXPECT_EQ((*list)[1].step, 20);
  EXPECT_EQ(f.files_of(job), 2u);  // the pruned blob is gone too
  auto latest = f.ckpts.get(job, std::nullopt);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->first.step, 30);
  EXPECT_EQ(latest->second, blob_bytes(30));
  auto at20 = f.ckpts.get(job, 20);
  ASSERT_TRUE(at20);
  EXPECT_EQ(at20->second, blob_bytes(20));
  EXPECT_EQ(f.ckpts.get(job, 10).error().code, ErrorCode::not_found);
  // The same step again replaces it (a retried upload).
  ASSERT_TRUE(f.put(job, 30, {w, epoch}, blob_bytes(31)));
  EXPECT_EQ(f.ckpts.get(job, 30)->second, blob_bytes(31));
  EXPECT_EQ(f.files_of(job), 2u);
}

TEST(CheckpointService, RefusesBadOrFencedUploadsAndChangesNothing) {
  CheckpointFixture f;
  auto [job, w, epoch] = f.leased_job();
  ASSERT_TRUE(f.put(job, 10, {w, epoch}, blob_bytes(10)));
  const std::string before = f.dump();
  const size_t files = f.files_of(job);
  const std::string bytes = blob_bytes(20);
  auto bad_crc = f.put(job, 20, {w, epoch}, bytes, crc32c::value(bytes.data(), bytes.size()) ^ 1u);
  ASSERT_FALSE(bad_crc);
  EXPECT_EQ(bad_crc.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(bad_crc.error().field, "crc32c");
  EXPECT_EQ(f.put(job, 20, {w, epoch + 1}, bytes).error().code, ErrorCode::stale_epoch);
  EXPECT_EQ(f.put(job, 20, {w + 1, epoch}, bytes).error().code, ErrorCode::stale_epoch);
  EXPECT_EQ(f.put(job + 100, 20, {w, epoch}, bytes).error().code, ErrorCode::not_found);
  EXPECT_EQ(f.put(job, 20, {w, epoch}, "").error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.put(job, -1, {w, epoch}, bytes).error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(f.dump(), before);
  EXPECT_EQ(f.files_of(job), files);
  // After the job is cancelled its lease is void: uploads are fenced off.
  ASSERT_TRUE(f.svc->cancel_job(job));
  EXPECT_EQ(f.put(job, 20, {w, epoch}, bytes).error().code, ErrorCode::stale_epoch);
}

TEST(CheckpointService, TooLargeUploadsAreRefused) {
  testing::ServiceFixture base;
  store::BlobStore blobs((base.dir.path() / "checkpoints").string());
  jobs::CheckpointOptions o;
  o.max_bytes = 1000;
  jobs::CheckpointService ckpts(*base.db, blobs, base.clock, o);
  const int64_t job = base.submit();
  const int64_t w = base.register_worker();
  auto g = base.lease_now(w);
  ASSERT_TRUE(g && *g);
  const std::string bytes(2000, 'x');
  jobs::CheckpointUpload up{job, 5, {w, (*g)->epoch}, crc32c::value(bytes.data(), bytes.size()), bytes};
  EXPECT_EQ(ckpts.put(up).error().code, ErrorCode::payload_too_large);
}

TEST(CheckpointService, FinishedJobsLoseTheirCheckpointsAndReconcileRemovesOrphans) {
  CheckpointFixture f;
  auto [job, w, epoch] = f.leased_job();
  ASSERT_TRUE(f.put(job, 10, {w, epoch}, blob_bytes(10)));
  // An orphan blob, as a crash between the blob and its row would leave.
  ASSERT_TRUE(f.blobs.write(job, "ckpt-000000000099-e1-0-0.ckpt", "orphan"));
  ASSERT_TRUE(f.blobs.write(job + 50, "stray.ckpt", "stray"));
  auto removed = f.ckpts.reconcile();
  ASSERT_TRUE(removed);
  EXPECT_EQ(*removed, 2);
  EXPECT_EQ(f.files_of(job), 1u);
  auto none = f.ckpts.sweep_finished();
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, 0);  // still running
  ASSERT_TRUE(f.svc->complete(job, jobs::CompletionReport{{w, epoch}, "{}"}));
  auto swept = f.ckpts.sweep_finished();
  ASSERT_TRUE(swept);
  EXPECT_EQ(*swept, 1);
  EXPECT_TRUE(f.ckpts.list(job)->empty());
  EXPECT_FALSE(fs::exists(f.dir.path() / "checkpoints" / ("job-" + std::to_string(job))));
}

TEST(CheckpointService, APreemptedJobsNextLeaseNamesTheNewestCheckpoint) {
  CheckpointFixture f;
  auto [job, w, epoch] = f.leased_job("3");
  ASSERT_TRUE(f.put(job, 10, {w, epoch}, blob_bytes(10)));
  ASSERT_TRUE(f.put(job, 20, {w, epoch}, blob_bytes(20, 100)));
  ASSERT_TRUE(f.svc->preempt(job, jobs::PreemptionReport{{w, epoch}, "test"}));
  const int64_t w2 = f.register_worker();
  auto g = f.lease_now(w2);
  ASSERT_TRUE(g && *g);
  ASSERT_TRUE((*g)->resume);
  EXPECT_EQ((*g)->resume->step, 20);
  EXPECT_EQ((*g)->resume->bytes, 100);
  const std::string b20 = blob_bytes(20, 100);
  EXPECT_EQ((*g)->resume->crc32c, crc32c::value(b20.data(), b20.size()));
  // The old lease can no longer upload; the new one can.
  EXPECT_EQ(f.put(job, 30, {w, epoch}, blob_bytes(30)).error().code, ErrorCode::stale_epoch);
  EXPECT_TRUE(f.put(job, 30, {w2, (*g)->epoch}, blob_bytes(30)));
}

// ---- HTTP routes

struct Routes : CheckpointFixture {
  Routes() { http::add_checkpoint_routes(router, ckpts); }
  net::HttpResponse call(const std::string& method, const std::string& target, std::string body = "",
                          std::string content_type = "application/octet-stream") {
    net::HttpRequest req;
    req.method = method;
    req.target = target;
    EXPECT_TRUE(net::parse_target(target, req));
    req.body = std::move(body);
    req.content_type = std::move(content_type);
    std::promise<net::HttpResponse> p;
    router.handle(req, [&p](net::HttpResponse r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  }
  net::Router router;
};

std::string crc_hex(const std::string& b) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", crc32c::value(b.data(), b.size()));
  return buf;
}

TEST(CheckpointRoutes, UploadListDownload) {
  Routes r;
  auto [job, w, epoch] = r.leased_job();
  const std::string bytes = blob_bytes(40);
  const std::string base = "/v1/jobs/" + std::to_string(job) + "/checkpoints";
  auto put = r.call("PUT", base + "/40?worker_id=" + std::to_string(w) + "&epoch=" + std::to_string(epoch) +
                               "&crc32c=" + crc_hex(bytes), bytes);
  ASSERT_EQ(put.status, 201) << put.body;
  EXPECT_EQ(json::parse(put.body)["crc32c"], crc_hex(bytes));
  auto list = r.call("GET", base);
  ASSERT_EQ(list.status, 200);
  const json l = json::parse(list.body);
  ASSERT_EQ(l["checkpoints"].size(), 1u);
  EXPECT_EQ(l["checkpoints"][0]["step"], 40);
  EXPECT_EQ(l["checkpoints"][0]["url"], base + "/40");
  for (const char* which : {"latest", "40"}) {
    auto get = r.call("GET", base + "/" + std::string(which));
    ASSERT_EQ(get.status, 200) << get.body;
    EXPECT_EQ(get.content_type, "application/octet-stream");
    EXPECT_EQ(get.body, bytes);
  }
  EXPECT_EQ(r.call("GET", base + "/41").status, 404);
  EXPECT_EQ(r.call("GET", "/v1/jobs/999/checkpoints").status, 404);
}

TEST(CheckpointRoutes, BadUploadsAre4xxNamingTheFieldAndChangeNothing) {
  Routes r;
  auto [job, w, epoch] = r.leased_job();
  const std::string before = r.dump();
  const std::string bytes = blob_bytes(50);
  const std::string base = "/v1/jobs/" + std::to_string(job) + "/checkpoints/50?";
  const std::string lease = "worker_id=" + std::to_string(w) + "&epoch=" + std::to_string(epoch);
  struct Case {
    std::string target, content_type;
    int status;
    std::string field;
  } cases[] = {
      {base + lease, "application/octet-stream", 400, "crc32c"},
      {base + lease + "&crc32c=xyz", "application/octet-stream", 400, "crc32c"},
      {base + lease + "&crc32c=" + crc_hex(bytes + "x"), "application/octet-stream", 400, "crc32c"},
      {base + "epoch=1&crc32c=" + crc_hex(bytes), "application/octet-stream", 400, "worker_id"},
      {base + lease + "&crc32c=" + crc_hex(bytes) + "&bogus=1", "application/octet-stream", 400, "bogus"},
      {base + "worker_id=" + std::to_string(w) + "&epoch=" + std::to_string(epoch + 1) + "&crc32c=" + crc_hex(bytes),
       "application/octet-stream", 409, "epoch"},
      {base + lease + "&crc32c=" + crc_hex(bytes), "application/json", 415, "Content-Type"},
      {"/v1/jobs/" + std::to_string(job) + "/checkpoints/minus?" + lease + "&crc32c=" + crc_hex(bytes),
       "application/octet-stream", 400, "step"},
  };
  for (const auto& c : cases) {
    auto res = r.call("PUT", c.target, bytes, c.content_type);
    EXPECT_EQ(res.status, c.status) << c.target << " " << res.body;
    const json j = json::parse(res.body, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << res.body;
    EXPECT_EQ(j["error"]["field"], c.field) << c.target << " " << res.body;
  }
  EXPECT_EQ(r.dump(), before);
  EXPECT_EQ(r.files_of(job), 0u);
}

TEST(CheckpointRoutes, OnlyCheckpointPutsAreUploads) {
  EXPECT_TRUE(http::is_checkpoint_upload("PUT", "/v1/jobs/3/checkpoints/100?worker_id=1"));
  EXPECT_FALSE(http::is_checkpoint_upload("GET", "/v1/jobs/3/checkpoints/100"));
  EXPECT_FALSE(http::is_checkpoint_upload("POST", "/v1/jobs"));
  EXPECT_FALSE(http::is_checkpoint_upload("PUT", "/v1/jobs?x=/checkpoints/"));
}

}  // namespace
}  // namespace jobctl::daemon
