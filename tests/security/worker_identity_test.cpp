// Workers are bound to their leases by their own secret (docs/security.md, "Workers"), and what a
// lease holder may store is checked:
//   A2  a second worker token, guessing worker id x epoch, completed another user's job with a
//       forged result, downloaded its checkpoint and uploaded a poisoned one;
//   A4  a lease holder uploaded junk with a valid CRC at step 9e18 (the upload half; the resume
//       half is resume_fallback_test.cpp);
//   A11 a user could not list their own job's checkpoints, but any worker token could read
//       every job's;
//   A15 a 1 MB heartbeat `progress` was stored.
#include <future>

#include "net/http_status.h"
#include "tests/security/security_support.h"
#include "tests/support/checkpoint_bytes.h"
#include "worker/checkpoint_transfer.h"

namespace jobctl::security {
namespace {

struct Cluster {
  Cluster() : data(dir.file("data")) {
    admin = create_token(data, "root", "admin");
    alice = create_token(data, "alice", "user");
    bob = create_token(data, "bob", "user");
    fleet_a = create_token(data, "fleet-a", "worker");
    fleet_b = create_token(data, "fleet-b", "worker");
    d.emplace(data, std::vector<std::string>{"--auth"});
  }
  const std::string& url() const { return d->url(); }

  // Alice's job of `spec`, leased by a worker of fleet A.
  struct Leased {
    int64_t job = 0;
    Worker worker;
    int64_t epoch = 0;
  };
  Leased alices_leased_job(const std::string& spec, const std::string& worker_name) {
    Leased out;
    out.job = submit(url(), alice, spec);
    out.worker = register_worker(url(), fleet_a, worker_name);
    const json l = lease(url(), fleet_a, out.worker);
    EXPECT_TRUE(l.is_object() && l["job_id"] == out.job) << l.dump();
    out.epoch = l.is_object() ? l.value("epoch", int64_t{0}) : 0;
    return out;
  }

  TempDir dir;
  std::string data, admin, alice, bob, fleet_a, fleet_b;
  std::optional<Jobctld> d;
};

// A raw upload (the worker's client sends only what it means to; an attacker sends anything).
client::HttpResult put_checkpoint(const std::string& url, const std::string& token, const std::string& secret,
                                  int64_t job, int64_t step, int64_t worker_id, int64_t epoch,
                                  const std::string& bytes) {
  worker::TransferOptions o;
  o.server = url;
  o.bearer_token = token;
  o.worker_secret = secret;
  o.retry.max_attempts = 1;
  TempDir dir;
  const std::string path = dir.file("upload.ckpt");
  std::ofstream(path, std::ios::binary) << bytes;
  worker::CheckpointTransfer t(o);
  auto st = t.upload(job, step, worker_id, epoch, path);
  client::HttpResult r;
  r.status = st ? 201 : static_cast<long>(net::http_status_for(st.error().code));
  r.body = st ? "" : st.error().message + " (field " + st.error().field + ")";
  return r;
}

TEST(WorkerIdentity, AnotherWorkersTokenCannotActForTheLeaseHolder) {
  Cluster c;
  ASSERT_TRUE(c.d->ok());
  const std::string spec = small_spec("alices-job");
  const auto [job, victim, epoch] = c.alices_leased_job(spec, "victim");
  ASSERT_GT(epoch, 0);
  const std::string good = jobctl::testing::checkpoint_for(spec, 8);
  ASSERT_EQ(put_checkpoint(c.url(), c.fleet_a, victim.secret, job, 8, victim.id, epoch, good).status, 201);

  // The attacker: another fleet's token and its own registered worker, guessing the victim's
  // worker id and every epoch up to a few.
  const Worker attacker = register_worker(c.url(), c.fleet_b, "attacker");
  const std::string poison = jobctl::testing::checkpoint_for(spec, 16);
  for (const std::string& secret : {attacker.secret, std::string()}) {
    auto http = http_as(c.url(), c.fleet_b, secret);
    for (int64_t guess = 1; guess <= 3; ++guess) {
      const json lease_ref = {{"worker_id", victim.id}, {"epoch", guess}};
      json forged = lease_ref;
      forged["result"] = {{"test_accuracy", 1.0}, {"final_loss", 0.0}};
      auto done = http.request("POST", "/v1/jobs/" + std::to_string(job) + "/complete", forged.dump());
      ASSERT_TRUE(done);
      EXPECT_EQ(done->status, 403) << done->body;
      json hb = lease_ref;
      hb["progress"] = {{"step", 999}};
      auto beat = http.request("POST", "/v1/jobs/" + std::to_string(job) + "/heartbeat", hb.dump());
      ASSERT_TRUE(beat);
      EXPECT_EQ(beat->status, 403) << beat->body;
      EXPECT_EQ(put_checkpoint(c.url(), c.fleet_b, secret, job, 16, victim.id, guess, poison).status, 403);
    }
    auto steal = http.request("GET", "/v1/jobs/" + std::to_string(job) + "/checkpoints/8");
    ASSERT_TRUE(steal);
    EXPECT_EQ(steal->status, 403) << steal->body;
    EXPECT_TRUE(steal->body.find("JOBCTLCK") == std::string::npos);
    auto listing = http.request("GET", "/v1/jobs/" + std::to_string(job) + "/checkpoints");
    ASSERT_TRUE(listing);
    EXPECT_EQ(listing->status, 403) << listing->body;
  }

  // Nothing changed: the job still runs under the victim's lease, with its own checkpoint.
  auto owner = http_as(c.url(), c.alice);
  const json got = body_of(*owner.request("GET", "/v1/jobs/" + std::to_string(job)));
  EXPECT_EQ(got["state"], "placed");
  EXPECT_TRUE(got["result"].is_null());
  const json listed = body_of(*owner.request("GET", "/v1/jobs/" + std::to_string(job) + "/checkpoints"));
  ASSERT_EQ(listed["checkpoints"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["checkpoints"][0]["step"], 8);
  // The lease holder itself still reads and reports.
  auto holder = http_as(c.url(), c.fleet_a, victim.secret);
  auto mine = holder.request("GET", "/v1/jobs/" + std::to_string(job) + "/checkpoints/8");
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->status, 200);
  EXPECT_EQ(mine->body, good);
  auto done = holder.request("POST", "/v1/jobs/" + std::to_string(job) + "/complete",
                             json{{"worker_id", victim.id}, {"epoch", epoch}, {"result", {{"test_accuracy", 0.5}}}}.dump());
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, 200) << done->body;
}

TEST(WorkerIdentity, CheckpointsAreReadableByTheOwnerTheLeaseHolderAndAdminsOnly) {
  Cluster c;
  ASSERT_TRUE(c.d->ok());
  const std::string spec = small_spec("alices-job");
  const auto [job, w, epoch] = c.alices_leased_job(spec, "holder");
  ASSERT_GT(epoch, 0);
  ASSERT_EQ(put_checkpoint(c.url(), c.fleet_a, w.secret, job, 8, w.id, epoch,
                           jobctl::testing::checkpoint_for(spec, 8)).status, 201);
  const std::string list = "/v1/jobs/" + std::to_string(job) + "/checkpoints";
  auto status = [&](const std::string& token, const std::string& secret, const std::string& path) {
    auto r = http_as(c.url(), token, secret).request("GET", path);
    return r ? r->status : 0L;
  };
  EXPECT_EQ(status(c.alice, "", list), 200);          // the owner
  EXPECT_EQ(status(c.alice, "", list + "/8"), 200);
  EXPECT_EQ(status(c.admin, "", list + "/latest"), 200);
  EXPECT_EQ(status(c.bob, "", list), 404);            // another user: as if it did not exist
  EXPECT_EQ(status(c.fleet_a, w.secret, list), 200);  // the lease holder
  const Worker other = register_worker(c.url(), c.fleet_a, "same-fleet-other-worker");
  EXPECT_EQ(status(c.fleet_a, other.secret, list + "/8"), 403);
  EXPECT_EQ(status(c.fleet_a, "", list + "/8"), 403);
}

// A gang's nodes each hold a lease of the job (docs/job-spec.md, "Jobs across machines"): every
// node reads the checkpoint it resumes from, and a worker that is no node of it still cannot.
TEST(WorkerIdentity, EveryNodeOfAGangReadsItsCheckpointsAndNoOtherWorker) {
  Cluster c;
  ASSERT_TRUE(c.d->ok());
  auto node = [&](const std::string& name, const std::string& address) {
    auto r = http_as(c.url(), c.fleet_a)
                 .request("POST", "/v1/workers/register",
                          json{{"name", name},
                               {"capabilities", {{"gpus", json::array()}, {"cpu_cores", 2}, {"memory_mb", 4096},
                                                 {"commands", true}, {"address", address}}}}
                              .dump());
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : r.error().message);
    const json j = r ? body_of(*r) : json();
    return Worker{j.value("worker_id", int64_t{0}), j.value("worker_secret", std::string())};
  };
  const Worker a = node("node-a", "10.0.0.1"), b = node("node-b", "10.0.0.2");
  const int64_t job = submit(c.url(), c.admin,
                             R"({"name":"gang","command":["python3","train_ddp.py"],"resources":{"gpu":"cpu","nodes":2}})");
  ASSERT_GT(job, 0);
  auto first = std::async(std::launch::async, [&] { return lease(c.url(), c.fleet_a, a, 20); });
  const json lb = lease(c.url(), c.fleet_a, b, 20);
  const json la = first.get();
  ASSERT_TRUE(la.is_object() && lb.is_object()) << la.dump() << lb.dump();
  ASSERT_EQ(la["job_id"], job);
  ASSERT_EQ(lb["job_id"], job);
  const bool a_is_rank0 = la["gang"]["rank"] == 0;
  const Worker& rank0 = a_is_rank0 ? a : b;
  const Worker& rank1 = a_is_rank0 ? b : a;
  const int64_t epoch = la.value("epoch", int64_t{0});
  ASSERT_EQ(put_checkpoint(c.url(), c.fleet_a, rank0.secret, job, 8, rank0.id, epoch, "opaque state of step 8").status,
            201);
  // The other node may not store one (rank 0 stores the job's), but reads it.
  EXPECT_EQ(put_checkpoint(c.url(), c.fleet_a, rank1.secret, job, 9, rank1.id, epoch, "not rank 0").status, 409);
  auto status = [&](const Worker& w) {
    auto r = http_as(c.url(), c.fleet_a, w.secret).request("GET", "/v1/jobs/" + std::to_string(job) + "/checkpoints/8");
    return r ? r->status : 0L;
  };
  EXPECT_EQ(status(rank0), 200);
  EXPECT_EQ(status(rank1), 200);
  EXPECT_EQ(status(register_worker(c.url(), c.fleet_a, "not-a-node")), 403);
}

TEST(UploadChecks, ALeaseHolderCannotStoreJunkAnotherTrainingsStateOrAStepBeyondTheJob) {
  Cluster c;
  ASSERT_TRUE(c.d->ok());
  const std::string spec = small_spec("checked", 2);  // 64 steps
  const auto [job, w, epoch] = c.alices_leased_job(spec, "w");
  ASSERT_GT(epoch, 0);
  auto upload = [&c, job = job, w = w, epoch = epoch](int64_t step, const std::string& bytes) {
    return put_checkpoint(c.url(), c.fleet_a, w.secret, job, step, w.id, epoch, bytes);
  };
  const int64_t huge = 9'000'000'000'000'000'000;
  const client::HttpResult junk = upload(huge, std::string(64 * 1024, 'j'));  // a valid CRC of junk
  EXPECT_EQ(junk.status, 400) << junk.body;
  const client::HttpResult far = upload(huge, jobctl::testing::checkpoint_for(spec, huge));
  EXPECT_EQ(far.status, 400) << far.body;
  EXPECT_NE(far.body.find("field step"), std::string::npos) << far.body;
  EXPECT_EQ(upload(65, jobctl::testing::checkpoint_for(spec, 65)).status, 400);  // one past the last step
  const client::HttpResult alien = upload(16, jobctl::testing::checkpoint_for(small_spec("other", 3), 16));
  EXPECT_EQ(alien.status, 400) << alien.body;
  EXPECT_EQ(upload(16, jobctl::testing::checkpoint_for(spec, 24)).status, 400);  // not the step it claims
  // None of them is "latest": the job has no checkpoint; a real one is accepted.
  auto owner = http_as(c.url(), c.alice);
  EXPECT_TRUE(body_of(*owner.request("GET", "/v1/jobs/" + std::to_string(job) + "/checkpoints"))["checkpoints"].empty());
  EXPECT_EQ(upload(64, jobctl::testing::checkpoint_for(spec, 64)).status, 201);
}

TEST(HeartbeatLimits, AHugeProgressIsRefusedNotStored) {
  Cluster c;
  ASSERT_TRUE(c.d->ok());
  const auto [job, w, epoch] = c.alices_leased_job(small_spec("chatty"), "w");
  ASSERT_GT(epoch, 0);
  auto http = http_as(c.url(), c.fleet_a, w.secret);
  const json big = {{"worker_id", w.id}, {"epoch", epoch}, {"progress", {{"note", std::string(1000 * 1000, 'p')}}}};
  auto r = http.request("POST", "/v1/jobs/" + std::to_string(job) + "/heartbeat", big.dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413) << r->body.substr(0, 300);
  EXPECT_EQ(body_of(*r)["error"]["field"], "progress");
  const json got = body_of(*http_as(c.url(), c.alice).request("GET", "/v1/jobs/" + std::to_string(job)));
  EXPECT_TRUE(got["progress"].is_null()) << got["progress"].dump().substr(0, 100);
}

}  // namespace
}  // namespace jobctl::security
