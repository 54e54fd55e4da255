// Recovery end to end (docs/recovery.md): jobctld, jobctl-worker and jobctl-train as
// real processes on loopback, a synthetic MLP job of a few seconds, and four failures:
//   - kill -9 of a worker mid-job: its lease expires, a second worker resumes from the last
//     uploaded checkpoint, the job succeeds with recoveries = 1;
//   - SIGTERM of a worker mid-job: it checkpoints at once, uploads, reports preempted and exits
//     0; a second worker resumes, and the final weights are byte-identical to an uninterrupted
//     run of the same spec (final.ckpt compared byte for byte, and the CRC32C the result reports);
//   - a corrupt newest stored checkpoint (bytes flipped in the daemon's blob file): the worker
//     detects it on download and resumes from the previous one; still bit-exact;
//   - kill -9 of jobctld mid-job and a restart on the same data dir and port: the worker keeps
//     training, reconnects, and the job succeeds with nothing lost (no recovery needed);
//   - a move asked through the API (POST /v1/jobs/{id}/move): the worker checkpoints at once on
//     the heartbeat's word, gives the job back, and the job resumes bit-exactly, with no recovery
//     counted; and a move for priority (an urgent job takes the only worker; the moved job
//     resumes after it, bit-exactly).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "tests/e2e/recovery_support.h"
#include "tests/support/temp_dir.h"
#include "tests/support/poll.h"

namespace jobctl::e2e {
namespace {

namespace fs = std::filesystem;

// The uninterrupted run, once for the whole suite: jobctl-train itself, as the worker runs it.
class RecoveryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    reference_dir_ = new jobctl::testing::TempDir();
    reference_final_ = new std::string(reference_final_checkpoint(reference_dir_->path().string()));
  }
  static void TearDownTestSuite() {
    delete reference_final_;
    delete reference_dir_;
  }

  static std::string reference_crc() { return crc32c_hex(*reference_final_); }

  int64_t submit(client::ApiClient& api, const std::string& name) {
    auto r = api.submit_job(recovery_spec(name));
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? (*r)["id"].get<int64_t>() : 0;
  }

  static jobctl::testing::TempDir* reference_dir_;
  static std::string* reference_final_;
  jobctl::testing::TempDir tmp_;
};

jobctl::testing::TempDir* RecoveryTest::reference_dir_ = nullptr;
std::string* RecoveryTest::reference_final_ = nullptr;

std::string diagnostics(const json& job, Process& a, Process* b, Process& d) {
  std::string s = "job: " + job.dump(2) + "\n--- worker A:\n" + a.output();
  if (b) s += "\n--- worker B:\n" + b->output();
  return s + "\n--- daemon:\n" + d.output();
}

TEST_F(RecoveryTest, KilledWorkerLeaseExpiresAndJobResumesElsewhere) {
  Daemon d(tmp_.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  Process a(worker_argv(d.url(), "worker-a", tmp_.file("work-a")));
  const int64_t id = submit(api, "kill9-worker");
  // Mid-job, after at least two checkpoints were stored.
  json job = wait_job(api, id, [](const json& j) { return progress_step(j) >= 250 || is_terminal(j); }, 120s);
  ASSERT_GE(progress_step(job), 250) << diagnostics(job, a, nullptr, d.process());
  ASSERT_FALSE(is_terminal(job)) << "the job ended before it could be interrupted; make it longer";
  auto listed = api.http().request("GET", "/v1/jobs/" + std::to_string(id) + "/checkpoints");
  ASSERT_TRUE(listed);
  const json before = json::parse(listed->body);
  ASSERT_FALSE(before["checkpoints"].empty()) << before.dump();
  const int64_t worker_a = job["worker_id"];
  ::kill(a.pid(), SIGKILL);
  a.stop(SIGKILL, 5s);

  // No heartbeat for the lease timeout (3 s): preempted, requeued, worker A lost.
  job = wait_job(api, id, is_back_in_queue, 30s);
  ASSERT_TRUE(is_back_in_queue(job)) << diagnostics(job, a, nullptr, d.process());
  EXPECT_EQ(job["recoveries"], 1);
  auto workers = api.list_workers();
  ASSERT_TRUE(workers);
  for (const auto& w : (*workers)["workers"])
    if (w["id"] == worker_a) {
      EXPECT_EQ(w["state"], "lost");
    }

  Process b(worker_argv(d.url(), "worker-b", tmp_.file("work-b")));
  job = wait_job(api, id, is_terminal, 180s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << diagnostics(job, a, &b, d.process());
  EXPECT_EQ(job["recoveries"], 1);
  const auto events = event_types(job);
  EXPECT_NE(std::find(events.begin(), events.end(), "preempted"), events.end());
  bool expired = false;
  for (const auto& e : job["events"])
    if (e["type"] == "preempted" && e["detail"].value("reason", "").find("lease expired") != std::string::npos)
      expired = true;
  EXPECT_TRUE(expired) << job["events"].dump(2);
  // Worker B resumed from a stored checkpoint, not from the beginning.
  std::smatch m;
  const std::string out_b = b.output();
  ASSERT_TRUE(std::regex_search(out_b, m, std::regex("resuming from the checkpoint at step ([0-9]+)"))) << out_b;
  EXPECT_GE(std::stoll(m[1]), before["checkpoints"][0]["step"].get<int64_t>());
  // Resumed on the same kind of machine with the same thread count: the same final weights.
  EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), reference_crc());
  // The job succeeded: all but its newest checkpoint are removed from the daemon; that one is
  // kept with the job's outputs for outputs.retention_s (docs/api.md, "Outputs").
  const std::string blobs = tmp_.file("data/checkpoints/job-" + std::to_string(id));
  auto blob_count = [&] {
    std::error_code ec;
    size_t n = 0;
    for (fs::directory_iterator it(blobs, ec), end; !ec && it != end; it.increment(ec)) ++n;
    return n;
  };
  (void)wait_job(api, id, [&](const json&) {
    auto l = api.http().request("GET", "/v1/jobs/" + std::to_string(id) + "/checkpoints");
    return l && json::parse(l->body)["checkpoints"].size() == 1 && blob_count() == 1;
  }, 10s);
  EXPECT_EQ(blob_count(), 1u);
  b.stop(SIGTERM, 30s);
}

TEST_F(RecoveryTest, SigtermedWorkerCheckpointsAtOnceAndResumeIsBitExact) {
  Daemon d(tmp_.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  Process a(worker_argv(d.url(), "worker-a", tmp_.file("work-a")));
  const int64_t id = submit(api, "sigterm-worker");
  json job = wait_job(api, id, [](const json& j) { return progress_step(j) >= 130 || is_terminal(j); }, 120s);
  ASSERT_GE(progress_step(job), 130) << diagnostics(job, a, nullptr, d.process());
  ASSERT_FALSE(is_terminal(job));

  auto st = a.stop(SIGTERM, 60s);
  ASSERT_TRUE(st) << "worker A did not exit after SIGTERM\n" << a.output();
  EXPECT_TRUE(st->success()) << st->describe() << "\n" << a.output();
  // The emergency checkpoint was uploaded before the job was given back.
  std::smatch m;
  const std::string out_a = a.output();
  ASSERT_TRUE(std::regex_search(out_a, m, std::regex("uploaded (signal|interrupt) checkpoint at step ([0-9]+)"))) << out_a;
  const int64_t signal_step = std::stoll(m[2]);
  EXPECT_NE(signal_step % 100, 0) << "a signal checkpoint falls between the periodic ones";
  job = wait_job(api, id, is_back_in_queue, 10s);
  ASSERT_TRUE(is_back_in_queue(job)) << diagnostics(job, a, nullptr, d.process());
  EXPECT_EQ(job["recoveries"], 1);
  auto latest = api.http().request("GET", "/v1/jobs/" + std::to_string(id) + "/checkpoints");
  ASSERT_TRUE(latest);
  EXPECT_EQ(json::parse(latest->body)["checkpoints"][0]["step"], signal_step) << latest->body;

  Process b(worker_argv(d.url(), "worker-b", tmp_.file("work-b")));
  job = wait_job(api, id, is_terminal, 180s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << diagnostics(job, a, &b, d.process());
  EXPECT_EQ(job["recoveries"], 1);
  EXPECT_NE(b.output().find("resuming from the checkpoint at step " + std::to_string(signal_step)), std::string::npos)
      << b.output();
  std::vector<std::string> expected = {"submitted", "leased", "started", "preempted", "requeued",
                                       "leased", "started", "succeeded"};
  std::vector<std::string> events = event_types(job);
  // Placement may add its own events; the recovery ones keep this order.
  std::vector<std::string> recovery_events;
  for (const auto& e : events)
    if (std::find(expected.begin(), expected.end(), e) != expected.end()) recovery_events.push_back(e);
  EXPECT_EQ(recovery_events, expected) << job["events"].dump(2);

  // Byte-identical final weights: the file, and the CRC32C the result reports.
  const std::string resumed_final = kept_final_checkpoint(tmp_.file("work-b"), id);
  ASSERT_FALSE(resumed_final.empty()) << "no final.ckpt kept by worker B";
  EXPECT_TRUE(resumed_final == *reference_final_) << "final weights differ from the uninterrupted run";
  EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), reference_crc());
  b.stop(SIGTERM, 30s);
}

TEST_F(RecoveryTest, MovedJobCheckpointsAtOnceAndResumesBitExact) {
  Daemon d(tmp_.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  Process a(worker_argv(d.url(), "worker-a", tmp_.file("work-a")));
  const int64_t id = submit(api, "moved");

  // Only a job a worker holds can move; bad bodies name their field and change nothing.
  auto early = api.http().request("POST", "/v1/jobs/" + std::to_string(id + 1000) + "/move", "{}");
  ASSERT_TRUE(early);
  EXPECT_EQ(early->status, 404) << early->body;
  auto bad_to = api.http().request("POST", "/v1/jobs/" + std::to_string(id) + "/move", R"({"to": "mars"})");
  ASSERT_TRUE(bad_to);
  EXPECT_EQ(bad_to->status, 400);
  EXPECT_EQ(json::parse(bad_to->body)["error"]["field"], "to") << bad_to->body;
  auto bad_key = api.http().request("POST", "/v1/jobs/" + std::to_string(id) + "/move", R"({"where": "local"})");
  ASSERT_TRUE(bad_key);
  EXPECT_EQ(bad_key->status, 400);
  EXPECT_EQ(json::parse(bad_key->body)["error"]["field"], "where") << bad_key->body;

  json job = wait_job(api, id, [](const json& j) { return progress_step(j) >= 130 || is_terminal(j); }, 120s);
  ASSERT_GE(progress_step(job), 130) << diagnostics(job, a, nullptr, d.process());
  ASSERT_FALSE(is_terminal(job));
  auto moved = api.move_job(id, "local", "test: make room");
  ASSERT_TRUE(moved) << moved.error().message;
  EXPECT_EQ((*moved)["move"]["to"], "local");

  job = wait_job(api, id, is_terminal, 180s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << diagnostics(job, a, nullptr, d.process());
  EXPECT_EQ(job["recoveries"], 0) << "a move is not a recovery";
  const std::string out_a = a.output();
  EXPECT_NE(out_a.find("is to move; checkpointing and giving it back"), std::string::npos) << out_a;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out_a, m, std::regex("uploaded (signal|interrupt) checkpoint at step ([0-9]+)"))) << out_a;
  const int64_t move_step = std::stoll(m[2]);
  EXPECT_NE(out_a.find("resuming from the checkpoint at step " + std::to_string(move_step)), std::string::npos)
      << out_a;
  std::vector<std::string> expected = {"submitted", "leased",   "started", "move_requested", "moved",
                                       "requeued",  "leased",   "started", "succeeded"};
  std::vector<std::string> seen;
  for (const auto& e : event_types(job))
    if (std::find(expected.begin(), expected.end(), e) != expected.end()) seen.push_back(e);
  EXPECT_EQ(seen, expected) << job["events"].dump(2);
  for (const auto& e : job["events"])
    if (e.value("type", "") == "move_requested") {
      EXPECT_EQ(e["detail"].value("to", ""), "local") << e.dump();
      EXPECT_EQ(e["detail"].value("reason", ""), "test: make room") << e.dump();
    }

  const std::string final_bytes = kept_final_checkpoint(tmp_.file("work-a"), id);
  ASSERT_FALSE(final_bytes.empty()) << "no final.ckpt kept by worker A";
  EXPECT_TRUE(final_bytes == *reference_final_) << "final weights differ from the uninterrupted run";
  EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), reference_crc());

  // Its ledger shows the two stretches on the worker, apart: before the move and after it.
  ASSERT_TRUE(job["segments"].is_array()) << job.dump(2);
  EXPECT_EQ(job["segments"].size(), 2u) << job["segments"].dump(2);
  for (const auto& seg : job["segments"]) {
    EXPECT_EQ(seg.value("option", ""), "local") << seg.dump();
    EXPECT_FALSE(seg.value("open", true)) << seg.dump();
  }
  // CPU workers: no on-demand offer has a CPU of theirs, so there is nothing to compare with.
  EXPECT_TRUE(job["cost"]["saved_usd"].is_null()) << job["cost"].dump();
  EXPECT_TRUE(job["cost"]["on_demand_usd"].is_null()) << job["cost"].dump();
  EXPECT_DOUBLE_EQ(job["cost"].value("no_on_demand_equivalent_usd", -1.0), job["cost"].value("usd", -2.0))
      << job["cost"].dump();

  // A finished job cannot move.
  auto late = api.move_job(id, "", "");
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, ErrorCode::conflict) << late.error().message;
  a.stop(SIGTERM, 30s);
}

// Moves for priority with real processes: a low-priority job runs on the only worker; a
// high-priority job that cannot meet its deadline waiting for it arrives; the low one is moved
// (checkpointed, given back), the urgent one runs, and the low one then resumes bit-exactly.
TEST_F(RecoveryTest, AnUrgentJobTakesTheWorkerAndTheMovedOneResumesBitExact) {
  const std::string config = tmp_.file("jobctld.json");
  std::ofstream(config) << json{{"placement", {{"reevaluate_s", 1}}}}.dump() << "\n";
  Daemon d(tmp_.file("data"), "127.0.0.1:0", 3, {"--config", config});
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  Process a(worker_argv(d.url(), "worker-a", tmp_.file("work-a")));
  // Long enough (12 epochs) that the move surely comes before its end, on any machine: the
  // placement pass (every second here) and the next heartbeat (every second) take up to 2 s.
  json low_spec = json::parse(recovery_spec("low"));
  low_spec["train"]["epochs"] = 12;
  low_spec["priority"] = 10;
  const std::string reference_dir = tmp_.file("reference-long");
  fs::create_directories(reference_dir);
  json reference_spec = low_spec;
  reference_spec.erase("priority");
  std::ofstream(reference_dir + "/spec.json") << reference_spec.dump() << "\n";
  const auto reference_run = jobctl::testing::run_to_end({env_or_fail("JOBCTL_TRAIN"), "--spec", reference_dir + "/spec.json",
                                                          "--out", reference_dir + "/out", "--device", "cpu", "--threads",
                                                          "1", "--log-every", "100"});
  ASSERT_TRUE(reference_run.success()) << reference_run.describe() << "\n" << reference_run.err;
  const std::string reference_final = read_bytes(reference_dir + "/out/final.ckpt");
  auto low_submitted = api.submit_job(low_spec.dump());
  ASSERT_TRUE(low_submitted) << low_submitted.error().message;
  const int64_t low = (*low_submitted)["id"];
  json job = wait_job(api, low, [](const json& j) { return progress_step(j) >= 130 || is_terminal(j); }, 120s);
  ASSERT_GE(progress_step(job), 130) << diagnostics(job, a, nullptr, d.process());

  json urgent_spec = json::parse(recovery_spec("urgent"));
  urgent_spec["priority"] = 90;
  urgent_spec["placement"] = {{"deadline_hours", 0.001}};  // 3.6 s: waiting for the low job misses it
  auto urgent_submitted = api.submit_job(urgent_spec.dump());
  ASSERT_TRUE(urgent_submitted) << urgent_submitted.error().message;
  const int64_t urgent = (*urgent_submitted)["id"];

  json first = wait_job(api, urgent, is_terminal, 180s);
  ASSERT_EQ(first.value("state", ""), "succeeded") << diagnostics(first, a, nullptr, d.process());
  job = wait_job(api, low, is_terminal, 180s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << diagnostics(job, a, nullptr, d.process());
  EXPECT_EQ(job["recoveries"], 0);
  bool made_room = false;
  int64_t moved_ms = 0;
  for (const auto& e : job["events"]) {
    if (e.value("type", "") == "move_requested")
      made_room = e["detail"].value("reason", "").find("priority: job " + std::to_string(urgent)) != std::string::npos;
    if (e.value("type", "") == "moved") moved_ms = e.value("time_ms", int64_t{0});
  }
  EXPECT_TRUE(made_room) << job["events"].dump(2);
  ASSERT_GT(moved_ms, 0) << job["events"].dump(2);
  // The urgent job started after the low one gave the worker back, and finished before the low
  // one was leased again.
  int64_t urgent_started = 0, urgent_done = 0, low_leased_again = 0;
  for (const auto& e : first["events"]) {
    if (e.value("type", "") == "started" && !urgent_started) urgent_started = e.value("time_ms", int64_t{0});
    if (e.value("type", "") == "succeeded") urgent_done = e.value("time_ms", int64_t{0});
  }
  for (const auto& e : job["events"])
    if (e.value("type", "") == "leased" && e.value("time_ms", int64_t{0}) > moved_ms)
      low_leased_again = e.value("time_ms", int64_t{0});
  EXPECT_GE(urgent_started, moved_ms) << first["events"].dump(2) << "\n" << job["events"].dump(2);
  EXPECT_GE(low_leased_again, urgent_done) << first["events"].dump(2) << "\n" << job["events"].dump(2) << "\n"
                                           << diagnostics(job, a, nullptr, d.process());

  const std::string final_bytes = kept_final_checkpoint(tmp_.file("work-a"), low);
  ASSERT_FALSE(final_bytes.empty()) << "no final.ckpt kept by worker A";
  EXPECT_TRUE(final_bytes == reference_final) << "the moved job's final weights differ from an uninterrupted run";
  a.stop(SIGTERM, 30s);
}

TEST_F(RecoveryTest, CorruptNewestCheckpointIsDetectedAndThePreviousOneUsed) {
  Daemon d(tmp_.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  Process a(worker_argv(d.url(), "worker-a", tmp_.file("work-a")));
  const int64_t id = submit(api, "corrupt-checkpoint");
  json job = wait_job(api, id, [](const json& j) { return progress_step(j) >= 350 || is_terminal(j); }, 120s);
  ASSERT_GE(progress_step(job), 350) << diagnostics(job, a, nullptr, d.process());
  ASSERT_FALSE(is_terminal(job));
  ::kill(a.pid(), SIGKILL);  // no emergency checkpoint: the stored ones stay as they are
  a.stop(SIGKILL, 5s);

  // An upload worker A sent just before it died may still be being stored: wait until the list
  // stops changing, so that "newest" is the one worker B will be offered.
  json cps;
  jobctl::testing::poll_until([&] {
    auto listed = api.http().request("GET", "/v1/jobs/" + std::to_string(id) + "/checkpoints");
    EXPECT_TRUE(listed);
    if (!listed) return true;  // failed: stop asking
    json now = json::parse(listed->body)["checkpoints"];
    const bool settled = now == cps;
    cps = std::move(now);
    return settled;
  }, 15s, 300ms);
  ASSERT_GE(cps.size(), 2u) << cps.dump();
  const int64_t newest = cps[0]["step"], previous = cps[1]["step"];
  // Flip bytes in the middle of the newest blob on disk (its name starts with its step).
  char prefix[32];
  std::snprintf(prefix, sizeof prefix, "ckpt-%012lld-", static_cast<long long>(newest));
  std::string blob;
  for (const auto& e : fs::directory_iterator(tmp_.file("data/checkpoints/job-" + std::to_string(id))))
    if (e.path().filename().string().rfind(prefix, 0) == 0) blob = e.path().string();
  ASSERT_FALSE(blob.empty());
  {
    std::fstream f(blob, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(fs::file_size(blob) / 2));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    f.seekp(static_cast<std::streamoff>(fs::file_size(blob) / 2));
    f.write(&c, 1);
  }

  Process b(worker_argv(d.url(), "worker-b", tmp_.file("work-b")));
  job = wait_job(api, id, is_terminal, 180s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << diagnostics(job, a, &b, d.process());
  const std::string out_b = b.output();
  EXPECT_NE(out_b.find("checkpoint at step " + std::to_string(newest) + " unusable"), std::string::npos) << out_b;
  EXPECT_NE(out_b.find("resuming from the checkpoint at step " + std::to_string(previous)), std::string::npos) << out_b;
  EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), reference_crc());
  b.stop(SIGTERM, 30s);
}

TEST_F(RecoveryTest, KilledDaemonRestartsAndTheRunningJobCarriesOn) {
  auto d1 = std::make_unique<Daemon>(tmp_.file("data"));
  ASSERT_FALSE(d1->url().empty());
  const std::string url = d1->url();
  const int port = d1->port();
  Process a(worker_argv(url, "worker-a", tmp_.file("work-a")));
  int64_t id = 0;
  {
    client::ApiClient api(url);
    id = submit(api, "kill9-daemon");
    json job = wait_job(api, id, [](const json& j) { return progress_step(j) >= 150 || is_terminal(j); }, 120s);
    ASSERT_GE(progress_step(job), 150) << diagnostics(job, a, nullptr, d1->process());
    ASSERT_FALSE(is_terminal(job));
  }
  ::kill(d1->process().pid(), SIGKILL);
  d1->process().stop(SIGKILL, 5s);
  std::this_thread::sleep_for(2s);  // the worker trains on; its heartbeats and uploads fail

  Daemon d2(tmp_.file("data"), "127.0.0.1:" + std::to_string(port));
  ASSERT_FALSE(d2.url().empty());
  client::ApiClient api(d2.url());
  json job = wait_job(api, id, is_terminal, 180s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << diagnostics(job, a, nullptr, d2.process());
  // The worker reconnected within the restart grace: the lease held, nothing was redone.
  EXPECT_EQ(job["recoveries"], 0) << job["events"].dump(2);
  EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), reference_crc());
  auto st = a.stop(SIGTERM, 30s);
  ASSERT_TRUE(st);
  EXPECT_TRUE(st->success()) << a.output();
}

}  // namespace
}  // namespace jobctl::e2e
