// The checkpoint blob store and service: uploads are verified (checksum, a checkpoint's framing,
// the job's training, a step within the job), fenced by lease epoch, stored durably and pruned to
// the spec's keep; a rejected checkpoint is deleted with an event; downloads return the stored
// bytes; a finished job's checkpoints are removed; the lease grant names the newest one; the HTTP
// routes act only for the worker whose secret they carry, and refuse bad input with a clear 4xx
// and change nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>

#include "base/crc32c.h"
#include "base/text_file.h"
#include "daemon/auth/worker_credentials.h"
#include "daemon/http/auth_gate.h"
#include "daemon/http/checkpoint_routes.h"
#include "net/json_body.h"
#include "daemon/jobs/checkpoint_service.h"
#include "daemon/jobs/output_service.h"
#include "daemon/store/blob_store.h"
#include "tests/daemon/service_support.h"
#include "tests/support/checkpoint_bytes.h"

namespace jobctl::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using jobs::CheckpointUpload;
using jobs::LeaseRef;

// The fixture's jobs: 32 steps an epoch, 10 epochs (320 steps).
std::string job_spec(const std::string& keep = "2") {
  return testing::mlp_spec(R"(,"train":{"epochs":10,"batch_size":8},"checkpoint":{"every_steps":10,"keep":)" + keep +
                           "}");
}

// A blob's bytes as stored (empty when it cannot be read).
std::string file_bytes(const std::string& path) {
  auto text = read_text_file(path, "blob");
  return text ? *text : std::string();
}

// A checkpoint of the fixture's job at `step` (`params` floats of weights).
std::string blob_bytes(int64_t step, size_t params = 1000) {
  return jobctl::testing::checkpoint_for(job_spec(), step, params);
}

struct CheckpointFixture : testing::ServiceFixture {
  CheckpointFixture()
      : blobs((dir.path() / "checkpoints").string()), ckpts(*db, blobs, clock, jobs::CheckpointOptions{}) {}

  // A job leased to a fresh worker: (job, worker, epoch). The worker's secret is `secret`.
  std::tuple<int64_t, int64_t, int64_t> leased_job(const std::string& keep = "2") {
    const int64_t job = submit(job_spec(keep));
    auto issued = auth::WorkerCredentials::issue();
    EXPECT_TRUE(issued);
    secret = issued->secret;
    const int64_t w = register_worker({}, "w", issued->hash_hex);
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
    auto staged = ckpts.stage(bytes);
    if (!staged) return staged.error();
    up.staged_file = *staged;
    up.bytes = bytes.size();
    return ckpts.put(up);
  }

  // Files left in the blob store's incoming folder (uploads must never be left there).
  size_t incoming_files() {
    size_t n = 0;
    std::error_code ec;
    for (fs::directory_iterator it(ckpts.incoming_dir(), ec), end; !ec && it != end; it.increment(ec)) ++n;
    return n;
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
  std::string secret;  // the worker's of leased_job()
};

TEST(BlobStore, WritesAtomicallyAndRemoves) {
  jobctl::testing::TempDir dir;
  store::BlobStore b((dir.path() / "blobs").string());
  ASSERT_TRUE(b.write(7, "a.ckpt", "hello"));
  ASSERT_TRUE(b.write(7, "a.ckpt", "hello again"));  // replaced whole
  EXPECT_EQ(file_bytes(b.path_of(7, "a.ckpt")), "hello again");
  EXPECT_FALSE(fs::exists(b.path_of(7, "a.ckpt") + ".tmp"));
  EXPECT_EQ(b.job_ids(), std::vector<int64_t>{7});
  EXPECT_EQ(b.names(7), std::vector<std::string>{"a.ckpt"});
  EXPECT_FALSE(fs::exists(b.path_of(7, "missing")));
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
    EXPECT_EQ(r->bytes, static_cast<int64_t>(blob_bytes(step).size()));
  }
  auto list = f.ckpts.list(job);
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 2u);  // keep = 2
  EXPECT_EQ((*list)[0].step, 30);
  EXPECT_EQ((*list)[1].step, 20);
  EXPECT_EQ(f.files_of(job), 2u);  // the pruned blob is gone too
  auto latest = f.ckpts.locate(job, std::nullopt);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->first.step, 30);
  EXPECT_EQ(file_bytes(latest->second), blob_bytes(30));
  auto at20 = f.ckpts.locate(job, 20);
  ASSERT_TRUE(at20);
  EXPECT_EQ(file_bytes(at20->second), blob_bytes(20));
  EXPECT_EQ(f.ckpts.locate(job, 10).error().code, ErrorCode::not_found);
  // The same step again replaces it (a retried upload).
  ASSERT_TRUE(f.put(job, 30, {w, epoch}, blob_bytes(30, 1001)));
  EXPECT_EQ(file_bytes(f.ckpts.locate(job, 30)->second), blob_bytes(30, 1001));
  EXPECT_EQ(f.files_of(job), 2u);
  EXPECT_EQ(f.incoming_files(), 0u);
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
  // Bytes with a right checksum that are not this job's checkpoint at this step.
  const jobs::LeaseRef lease{w, epoch};  // (a lambda may not capture structured bindings in Clang 14)
  auto refused = [&f, job = job, lease](const std::string& b, int64_t step) { return f.put(job, step, lease, b).error(); };
  const Error junk = refused(std::string(5000, 'j'), 20);
  EXPECT_EQ(junk.code, ErrorCode::corrupt_checkpoint);
  EXPECT_EQ(junk.field, "body");
  std::string torn = bytes;
  torn[torn.size() / 2] ^= 1;  // a section's CRC no longer matches
  EXPECT_EQ(refused(torn, 20).code, ErrorCode::corrupt_checkpoint);
  EXPECT_EQ(refused(bytes.substr(0, bytes.size() - 3), 20).code, ErrorCode::corrupt_checkpoint);
  EXPECT_EQ(refused(bytes + "x", 20).code, ErrorCode::corrupt_checkpoint);
  const Error other = refused(jobctl::testing::checkpoint_for(job_spec(), 20, 1000, 1), 20);
  EXPECT_EQ(other.code, ErrorCode::checkpoint_mismatch);
  const Error wrong_step = refused(bytes, 21);
  EXPECT_EQ(wrong_step.code, ErrorCode::invalid_argument);
  EXPECT_EQ(wrong_step.field, "step");
  const int64_t huge_step = 9'000'000'000'000'000'000;
  const Error huge = refused(blob_bytes(huge_step), huge_step);
  EXPECT_EQ(huge.field, "step") << huge.message;
  EXPECT_EQ(refused(blob_bytes(321), 321).field, "step");  // one past the job's 320 steps
  EXPECT_EQ(f.dump(), before);
  EXPECT_EQ(f.files_of(job), files);
  EXPECT_EQ(f.incoming_files(), 0u);
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
  auto staged = ckpts.stage(bytes);
  ASSERT_TRUE(staged);
  jobs::CheckpointUpload up{job, 5, {w, (*g)->epoch}, crc32c::value(bytes.data(), bytes.size()), *staged, bytes.size()};
  EXPECT_EQ(ckpts.put(up).error().code, ErrorCode::payload_too_large);
  EXPECT_FALSE(fs::exists(*staged));  // put() owns the staged file: refused, it is removed
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

// A succeeded job keeps its final checkpoint (the trained model) with its outputs for the
// retention period; its older ones go at once; a failed job keeps none.
TEST(CheckpointService, ASucceededJobKeepsItsFinalCheckpointForTheOutputsRetention) {
  CheckpointFixture f;
  store::BlobStore blobs((f.dir.path() / "kept").string());
  jobs::CheckpointOptions o;
  o.final_checkpoint_retention_ms = 60'000;
  jobs::CheckpointService ckpts(*f.db, blobs, f.clock, o);
  auto [job, w, epoch] = f.leased_job("3");
  for (int64_t step : {10, 20, 30}) {
    auto staged = ckpts.stage(blob_bytes(step));
    ASSERT_TRUE(staged);
    const std::string bytes = blob_bytes(step);
    ASSERT_TRUE(ckpts.put(CheckpointUpload{job, step, {w, epoch}, crc32c::value(bytes.data(), bytes.size()), *staged,
                                           bytes.size()}));
  }
  ASSERT_TRUE(f.svc->complete(job, jobs::CompletionReport{{w, epoch}, "{}"}));
  auto swept = ckpts.sweep_finished();
  ASSERT_TRUE(swept) << swept.error().message;
  EXPECT_EQ(*swept, 1);
  auto left = ckpts.list(job);
  ASSERT_TRUE(left);
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ((*left)[0].step, 30);
  EXPECT_TRUE(ckpts.locate(job, std::nullopt));
  EXPECT_EQ(*ckpts.sweep_finished(), 0);  // nothing more to do within the retention
  f.clock.advance_ms(60'001);
  EXPECT_EQ(*ckpts.sweep_finished(), 1);
  EXPECT_TRUE(ckpts.list(job)->empty());
  EXPECT_FALSE(fs::exists(f.dir.path() / "kept" / ("job-" + std::to_string(job))));
}

// Outputs: stored per file under the lease, listed, replaced by path; deleted with their folder
// once their job has been finished for longer than the retention, rows first; reconcile() drops
// blobs no row names and rows whose blob is gone.
TEST(OutputService, OutputsAreKeptForTheRetentionThenSweptRowsFirst) {
  CheckpointFixture f;
  store::BlobStore blobs((f.dir.path() / "outputs").string());
  jobs::OutputService outputs(*f.db, blobs, f.clock, jobs::OutputOptions{1 << 20, 1 << 20, 60'000});
  ASSERT_TRUE(outputs.reconcile());
  auto [job, w, epoch] = f.leased_job();
  // Copies, not the bindings: a lambda captures them (clang 14 refuses structured bindings there).
  auto put = [&, job = job, w = w, epoch = epoch](const std::string& path, const std::string& bytes) {
    auto staged = outputs.stage(bytes);
    EXPECT_TRUE(staged);
    return outputs.put(jobs::OutputUpload{job, path, {w, epoch}, *staged, bytes.size()});
  };
  ASSERT_TRUE(put("a.txt", "first"));
  ASSERT_TRUE(put("dir/b.bin", "bbbb"));
  ASSERT_TRUE(put("a.txt", "second!"));  // replaces
  auto listed = outputs.list(job);
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].path, "a.txt");
  EXPECT_EQ((*listed)[0].bytes, 7);
  auto located = outputs.locate(job, "a.txt");
  ASSERT_TRUE(located);
  EXPECT_EQ(file_bytes(located->second), "second!");
  EXPECT_EQ(blobs.names(job).size(), 2u);  // the replaced blob is gone
  EXPECT_EQ(outputs.locate(job, "../a.txt").error().field, "path");
  EXPECT_EQ(outputs.locate(job, "nope").error().code, ErrorCode::not_found);

  // A stray blob and a stray folder, as a crash between blob and row would leave.
  ASSERT_TRUE(blobs.write(job, "out-1-99", "stray"));
  ASSERT_TRUE(blobs.write(job + 40, "out-1-98", "stray"));
  auto fixed = outputs.reconcile();
  ASSERT_TRUE(fixed);
  EXPECT_EQ(*fixed, 2);
  EXPECT_EQ(outputs.list(job)->size(), 2u);

  EXPECT_EQ(*outputs.sweep(), 0);  // running
  ASSERT_TRUE(f.svc->complete(job, jobs::CompletionReport{{w, epoch}, "{}"}));
  EXPECT_EQ(*outputs.sweep(), 0);  // finished, within the retention
  f.clock.advance_ms(60'001);
  EXPECT_EQ(*outputs.sweep(), 1);
  EXPECT_TRUE(outputs.list(job)->empty());
  EXPECT_FALSE(fs::exists(f.dir.path() / "outputs" / ("job-" + std::to_string(job))));
  // A finished job's lease stores nothing more.
  auto late = put("c.txt", "late");
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, ErrorCode::stale_epoch);
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
  const std::string b20 = blob_bytes(20, 100);
  EXPECT_EQ((*g)->resume->step, 20);
  EXPECT_EQ((*g)->resume->bytes, static_cast<int64_t>(b20.size()));
  EXPECT_EQ((*g)->resume->crc32c, crc32c::value(b20.data(), b20.size()));
  // The old lease can no longer upload; the new one can.
  EXPECT_EQ(f.put(job, 30, {w, epoch}, blob_bytes(30)).error().code, ErrorCode::stale_epoch);
  EXPECT_TRUE(f.put(job, 30, {w2, (*g)->epoch}, blob_bytes(30)));
}

TEST(CheckpointService, ARejectedCheckpointIsDeletedWithAnEventAndTheLeaseFallsBack) {
  CheckpointFixture f;
  auto [job, w, epoch] = f.leased_job("3");
  ASSERT_TRUE(f.put(job, 10, {w, epoch}, blob_bytes(10)));
  ASSERT_TRUE(f.put(job, 20, {w, epoch}, blob_bytes(20)));
  // Fenced like every report, and only a stored step.
  EXPECT_EQ(f.ckpts.reject({job, 20, {w, epoch + 1}, "x", 10}).error().code, ErrorCode::stale_epoch);
  EXPECT_EQ(f.ckpts.reject({job, 15, {w, epoch}, "x", 10}).error().code, ErrorCode::not_found);
  auto left = f.ckpts.reject({job, 20, {w, epoch}, "the model layout differs", 10});
  ASSERT_TRUE(left) << left.error().message;
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ((*left)[0].step, 10);
  EXPECT_EQ(f.files_of(job), 1u);
  auto detail = f.svc->get_job(job);
  ASSERT_TRUE(detail);
  const auto& ev = detail->events.back();
  EXPECT_EQ(ev.type, "checkpoint_rejected");
  const json d = json::parse(ev.detail_json);
  EXPECT_EQ(d["step"], 20);
  EXPECT_EQ(d["fallback_step"], 10);
  EXPECT_EQ(d["error"], "the model layout differs");
  // The next lease names the one before it; past the last one, none (a fresh start).
  ASSERT_TRUE(f.ckpts.reject({job, 10, {w, epoch}, "corrupt", std::nullopt}));
  EXPECT_TRUE(json::parse(f.svc->get_job(job)->events.back().detail_json)["fallback_step"].is_null());
  ASSERT_TRUE(f.svc->preempt(job, jobs::PreemptionReport{{w, epoch}, "test"}));
  auto g = f.lease_now(f.register_worker());
  ASSERT_TRUE(g && *g);
  EXPECT_FALSE((*g)->resume);
}

// ---- HTTP routes

struct Routes : CheckpointFixture {
  Routes() : workers(*db) {
    http::add_checkpoint_routes(router, ckpts, downloads);
    router.set_gate(http::make_request_gate({nullptr, nullptr, &workers, db.get()}, {}));
  }
  net::HttpResponse call(const std::string& method, const std::string& target, std::string body = "",
                          std::string content_type = "application/octet-stream") {
    net::HttpRequest req;
    req.method = method;
    req.target = target;
    EXPECT_TRUE(net::parse_target(target, req));
    req.body = std::move(body);
    req.content_type = std::move(content_type);
    req.set_header("X-Worker-Secret", worker_secret.empty() ? secret : worker_secret);
    std::promise<net::HttpResponse> p;
    router.handle(req, [&p](net::HttpResponse r) { p.set_value(std::move(r)); });
    return p.get_future().get();
  }
  auth::WorkerCredentials workers;
  http::DownloadSlots downloads{4};
  net::Router router;
  std::string worker_secret;  // set: sent instead of the leased worker's
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
    EXPECT_TRUE(get.body.empty()) << "sent from the blob's file, not from memory";
    EXPECT_EQ(file_bytes(get.body_path), bytes);
  }
  EXPECT_EQ(r.call("GET", base + "/41").status, 404);
  EXPECT_EQ(r.call("GET", "/v1/jobs/999/checkpoints").status, 404);
  // The worker rejects it: gone, and the list says what is left.
  auto rej = r.call("POST", base + "/40/reject",
                    json{{"worker_id", w}, {"epoch", epoch}, {"error", "refused"}, {"fallback_step", nullptr}}.dump(),
                    "application/json");
  ASSERT_EQ(rej.status, 200) << rej.body;
  EXPECT_TRUE(json::parse(rej.body)["checkpoints"].empty());
  EXPECT_EQ(r.call("GET", base + "/40").status, 404);
}

TEST(CheckpointRoutes, AWorkerActsOnlyForItselfWithItsOwnSecret) {
  Routes r;
  auto [job, w, epoch] = r.leased_job();
  const std::string victim_secret = r.secret;
  // Another registered worker, with its own secret, claiming the first one's lease.
  auto other = auth::WorkerCredentials::issue();
  ASSERT_TRUE(other);
  const int64_t w2 = r.register_worker({}, "intruder", other->hash_hex);
  const std::string bytes = blob_bytes(40);
  const std::string base = "/v1/jobs/" + std::to_string(job) + "/checkpoints";
  const std::string upload = base + "/40?worker_id=" + std::to_string(w) + "&epoch=" + std::to_string(epoch) +
                             "&crc32c=" + crc_hex(bytes);
  const std::string before = r.dump();
  for (const std::string& secret : {other->secret, std::string("jcw_") + std::string(64, '0'), std::string("nope")}) {
    r.worker_secret = secret;
    auto put = r.call("PUT", upload, bytes);
    EXPECT_EQ(put.status, 403) << put.body;
    auto rej = r.call("POST", base + "/40/reject", json{{"worker_id", w}, {"epoch", epoch}, {"error", "x"}}.dump(),
                      "application/json");
    EXPECT_EQ(rej.status, 403) << rej.body;
  }
  // Its own id with the victim's epoch: its secret is right, the lease is not its.
  r.worker_secret = other->secret;
  auto own = r.call("PUT", base + "/40?worker_id=" + std::to_string(w2) + "&epoch=" + std::to_string(epoch) +
                               "&crc32c=" + crc_hex(bytes), bytes);
  EXPECT_EQ(own.status, 409) << own.body;
  EXPECT_EQ(r.dump(), before);
  EXPECT_EQ(r.incoming_files(), 0u);
  r.worker_secret = victim_secret;
  EXPECT_EQ(r.call("PUT", upload, bytes).status, 201);
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
      {"/v1/jobs/" + std::to_string(job) + "/checkpoints/51?" + lease + "&crc32c=" + crc_hex(bytes),
       "application/octet-stream", 400, "step"},
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
  EXPECT_EQ(r.incoming_files(), 0u);
}

// The route table says which bodies go to a file: the checkpoint PUT's, no other of its routes.
TEST(CheckpointRoutes, OnlyCheckpointPutsAreUploads) {
  Routes r;
  auto file_body = [&r](const char* method, const char* path) {
    return r.router.match(method, path).body().kind == net::RequestBody::Kind::file;
  };
  EXPECT_TRUE(file_body("PUT", "/v1/jobs/3/checkpoints/100"));
  EXPECT_FALSE(file_body("GET", "/v1/jobs/3/checkpoints/100"));
  EXPECT_FALSE(file_body("POST", "/v1/jobs/3/checkpoints/100/reject"));
  EXPECT_FALSE(file_body("PUT", "/v1/jobs"));
}

}  // namespace
}  // namespace jobctl::daemon
