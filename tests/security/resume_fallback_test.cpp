// A checkpoint that passes the daemon's upload checks but that the trainer refuses to resume
// from (attack A4: the next worker's trainer exited 4 and the job ended failed) is rejected by
// the worker: the daemon deletes it with a `checkpoint_rejected` event, and the job falls back
// to the previous checkpoint, then to a fresh start, failing only if a fresh start fails. Real
// processes: jobctld, jobctl-worker, jobctl-train; the poisoned checkpoint is uploaded over HTTP
// by a lease holder.
#include <filesystem>

#include "base/text_file.h"
#include "tests/security/security_support.h"
#include "train/checkpoint/checkpoint_format.h"
#include "worker/checkpoint_transfer.h"

namespace jobctl::security {
namespace {

std::string read_file(const std::string& path) {
  auto bytes = read_text_file(path, "checkpoint");
  EXPECT_TRUE(bytes) << bytes.error().message;
  return bytes ? *bytes : std::string();
}

// A real checkpoint of `spec` at `step`, written by jobctl-train itself.
std::string trained_checkpoint(const TempDir& dir, const std::string& spec, int64_t step) {
  const std::string spec_path = dir.file("spec.json");
  std::ofstream(spec_path) << spec;
  const std::string out = dir.file("train-out");
  CommandResult r = run_command({env_or_fail("JOBCTL_TRAIN"), "--spec", spec_path, "--out", out, "--device", "cpu",
                                 "--threads", "1", "--max-steps", std::to_string(step)});
  EXPECT_TRUE(r.status.success()) << r.err;
  char name[64];
  std::snprintf(name, sizeof name, "ckpt-%012lld.ckpt", static_cast<long long>(step));
  return read_file((std::filesystem::path(out) / name).string());
}

// The same training's state at a later step, with a model layout the spec does not have: every
// check the daemon can make passes (framing, fingerprint, step); the trainer refuses it.
std::string poisoned(const std::string& good, int64_t step) {
  auto state = train::decode_checkpoint({reinterpret_cast<const uint8_t*>(good.data()), good.size()});
  EXPECT_TRUE(state) << state.error().message;
  if (!state) return {};
  state->layout_hash ^= 0xdead;
  state->global_step = step;
  const auto bytes = train::encode_checkpoint(*state);
  return std::string(bytes.begin(), bytes.end());
}

// A worker of the test's own leases the jobs (in submit order: no cost-based placement), stores
// each job's `uploads` (step -> bytes) under its lease and gives the jobs back, as an interrupted
// worker would.
using Uploads = std::vector<std::pair<int64_t, std::string>>;
void store_and_give_back(const std::string& url, const std::vector<std::pair<int64_t, Uploads>>& jobs,
                         const TempDir& dir) {
  const Worker w = register_worker(url, "", "uploader");
  worker::TransferOptions o;
  o.server = url;
  o.worker_secret = w.secret;
  worker::CheckpointTransfer transfer(o);
  std::vector<std::pair<int64_t, int64_t>> leases;  // (job, epoch)
  for (const auto& [job, uploads] : jobs) {
    const json l = lease(url, "", w);
    ASSERT_TRUE(l.is_object());
    ASSERT_EQ(l["job_id"], job);
    const int64_t epoch = l["epoch"];
    leases.emplace_back(job, epoch);
    for (const auto& [step, bytes] : uploads) {
      const std::string path = dir.file("upload-" + std::to_string(job) + "-" + std::to_string(step) + ".ckpt");
      std::ofstream(path, std::ios::binary) << bytes;
      auto st = transfer.upload(job, step, w.id, epoch, path);
      ASSERT_TRUE(st) << "job " << job << " step " << step << ": " << st.error().message;
    }
  }
  for (const auto& [job, epoch] : leases) {
    auto r = http_as(url, "", w.secret)
                 .request("POST", "/v1/jobs/" + std::to_string(job) + "/preempt",
                          json{{"worker_id", w.id}, {"epoch", epoch}, {"reason", "test: machine reclaimed"}}.dump());
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : r.error().message);
  }
}

std::vector<json> events_of(const json& job, const std::string& type) {
  std::vector<json> out;
  for (const auto& e : job.value("events", json::array()))
    if (e.value("type", "") == type) out.push_back(e);
  return out;
}

TEST(ResumeFallback, ARefusedCheckpointFallsBackToThePreviousOneThenToAFreshStart) {
  TempDir dir;
  std::vector<std::string> flags = config_flag(dir, {{"placement", {{"enabled", false}}}});
  for (const char* f : {"--heartbeat-interval-s", "1", "--lease-timeout-s", "5"}) flags.push_back(f);
  Jobctld d(dir.file("data"), flags);
  ASSERT_TRUE(d.ok());
  const std::string spec = small_spec("fallback", 4);  // 128 steps
  const std::string good = trained_checkpoint(dir, spec, 24);
  ASSERT_FALSE(good.empty());
  const std::string bad = poisoned(good, 40);
  // Job 1: a good checkpoint at 24 under a poisoned one at 40. Job 2: only the poisoned one.
  const int64_t job1 = submit(d.url(), "", spec);
  const int64_t job2 = submit(d.url(), "", spec);
  store_and_give_back(d.url(), {{job1, {{24, good}, {40, bad}}}, {job2, {{40, bad}}}}, dir);

  Process worker({env_or_fail("JOBCTL_WORKER"), "--server", d.url(), "--name", "resumer", "--trainer",
                  env_or_fail("JOBCTL_TRAIN"), "--work-dir", dir.file("work"), "--device", "cpu", "--threads", "1",
                  "--wait-s", "1", "--max-jobs", "2"});
  auto done = [](const json& j) {
    const std::string s = j.value("state", "");
    return s == "succeeded" || s == "failed" || s == "cancelled";
  };
  const json j1 = wait_job(d.url(), "", job1, done, 120s);
  const json j2 = wait_job(d.url(), "", job2, done, 120s);
  EXPECT_EQ(j1["state"], "succeeded") << j1.dump(1) << "\n" << worker.output();
  EXPECT_EQ(j2["state"], "succeeded") << j2.dump(1) << "\n" << worker.output();

  // Job 1: step 40 rejected, falling back to 24, from which it resumed.
  const auto r1 = events_of(j1, "checkpoint_rejected");
  ASSERT_EQ(r1.size(), 1u) << j1["events"].dump(1);
  EXPECT_EQ(r1[0]["detail"]["step"], 40);
  EXPECT_EQ(r1[0]["detail"]["fallback_step"], 24);
  EXPECT_NE(r1[0]["detail"]["error"].get<std::string>().find("layout"), std::string::npos) << r1[0].dump();
  EXPECT_NE(worker.output().find("job " + std::to_string(job1) + ": resuming from the checkpoint at step 24"),
            std::string::npos)
      << worker.output();
  // Job 2: step 40 rejected with nothing left: a fresh start.
  const auto r2 = events_of(j2, "checkpoint_rejected");
  ASSERT_EQ(r2.size(), 1u) << j2["events"].dump(1);
  EXPECT_EQ(r2[0]["detail"]["step"], 40);
  EXPECT_TRUE(r2[0]["detail"]["fallback_step"].is_null());
  EXPECT_EQ(j2["result"]["steps"], 128) << j2["result"].dump();
  worker.stop(SIGTERM, 10s);
}

}  // namespace
}  // namespace jobctl::security
