// A job's outputs end to end (docs/job-protocol.md, "Outputs"): jobctld with its provisioner on
// the `sim` driver, jobctl-cloudsim and the instances' jobctl-worker, all real, on loopback.
//
// A command job (tests/e2e/programs/writes_outputs.py) on a spot instance writes model/first.bin
// to JOBCTL_OUTPUT_DIR; the instance is interrupted by a spot notice, so the worker uploads the
// outputs after the emergency checkpoint and gives the job back; the job resumes on a second
// instance, whose worker restores model/first.bin into the new JOBCTL_OUTPUT_DIR before the
// program starts (the program checks it), and finishes. jobctld is then SIGKILLed and restarted,
// and `jobctl outputs ID --to DIR` writes every file, model/first.bin byte-identical.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "base/utc_time.h"
#include "cloud/sim_provider.h"
#include "tests/e2e/cloud_support.h"
#include "tests/e2e/recovery_support.h"
#include "tests/support/temp_dir.h"

namespace jobctl::e2e {
namespace {

// What the program writes to model/first.bin on its first lease.
std::string first_output_bytes() {
  std::string bytes(262144, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 7919 + (i >> 8)) & 0xff);
  return bytes;
}

TEST(Outputs, ASpotInterruptedCommandJobKeepsItsOutputsAcrossTheResumeAndADaemonRestart) {
  jobctl::testing::TempDir tmp;
  CloudSim sim(tmp.file("cloudsim"), " --allow-commands");
  ASSERT_FALSE(sim.url().empty());
  const std::string config = write_config(tmp, sim.url(), "outputs-e2e");
  auto d1 = std::make_unique<Daemon>(tmp.file("data"), "127.0.0.1:0", 30, std::vector<std::string>{"--config", config});
  ASSERT_FALSE(d1->url().empty());
  const std::string url = d1->url();
  const int port = d1->port();
  cloud::SimProvider cloudsim({sim.url(), 5000});
  int64_t id = 0;
  {
    client::ApiClient api(url);
    const json spec = {
        {"name", "outputs-e2e"},
        {"command", {"/usr/bin/python3", env_or_fail("JOBCTL_SOURCE_DIR") + "/tests/e2e/programs/writes_outputs.py", "150"}},
        {"estimate", {{"hours", 0.5}, {"gpu", "V100"}}},
        {"resources", {{"gpu", "V100"}, {"gpus", 1}}},
        {"placement", {{"mode", "cloud"}}}};
    auto submitted = api.submit_job(spec.dump());
    ASSERT_TRUE(submitted) << submitted.error().message;
    id = (*submitted)["id"];

    json job = wait_job(api, id, [](const json& j) { return progress_step(j) >= 20 || is_terminal(j); }, 180s);
    ASSERT_GE(progress_step(job), 20) << job.dump(2) << "\n--- daemon:\n" << d1->process().output()
                                      << "\n--- cloudsim:\n" << sim.process().output();
    ASSERT_EQ(job["placement"]["chosen"]["option"], "spot") << job["placement"].dump(2);
    json first;
    for (const auto& i : instances(api))
      if (i["job_id"] == id) first = i;
    ASSERT_TRUE(first.is_object()) << instances(api).dump(2);
    const std::string inst = first["id"];
    const std::string first_log = tmp.file("cloudsim/instances/" + inst + "/worker.log");

    // The notice: the program checkpoints and exits; the worker stores its outputs, then gives
    // the job back.
    client::HttpClient http(sim.url());
    auto r = http.request("POST", "/instances/" + inst + "/interrupt", "{}");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    job = wait_job(api, id, [](const json& j) { return j.value("recoveries", 0) >= 1 || is_terminal(j); }, 60s);
    ASSERT_EQ(job.value("recoveries", 0), 1) << job.dump(2) << "\n--- instance worker:\n" << read_bytes(first_log);
    EXPECT_NE(read_bytes(first_log).find("stored 1 output file(s) (262144 bytes)"), std::string::npos)
        << read_bytes(first_log);
    auto listed = api.list_outputs(id);
    ASSERT_TRUE(listed) << listed.error().message;
    ASSERT_EQ((*listed)["outputs"].size(), 1u) << listed->dump();
    EXPECT_EQ((*listed)["outputs"][0]["path"], "model/first.bin");

    job = wait_job(api, id, is_terminal, 240s);
    ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n--- daemon:\n" << d1->process().output();
    EXPECT_EQ(job["recoveries"], 1);
    // The resumed program found model/first.bin in its new JOBCTL_OUTPUT_DIR.
    EXPECT_EQ(job["result"].value("restored", json()), true) << job["result"].dump();
    json second;
    for (const auto& i : instances(api))
      if (i["id"] != inst && i["launched_for_job_id"] == id) second = i;
    ASSERT_TRUE(second.is_object()) << instances(api).dump(2);
    const std::string second_log =
        read_bytes(tmp.file("cloudsim/instances/" + second["id"].get<std::string>() + "/worker.log"));
    EXPECT_NE(second_log.find("restored 1 output file(s) (262144 bytes)"), std::string::npos) << second_log;
    // Unchanged, the restored file is not sent again: the second lease stores its two new files.
    EXPECT_NE(second_log.find("stored 2 output file(s)"), std::string::npos) << second_log;
  }

  // jobctld is killed and restarted on the same port and data directory.
  ::kill(d1->process().pid(), SIGKILL);
  d1->process().stop(SIGKILL, 5s);
  d1.reset();
  Daemon d2(tmp.file("data"), "127.0.0.1:" + std::to_string(port), 30, {"--config", config});
  ASSERT_FALSE(d2.url().empty());
  client::ApiClient api(d2.url());

  const std::string to = tmp.file("downloaded");
  const auto cli = jobctl::testing::run_to_end(
      {env_or_fail("JOBCTL_CLI"), "--server", d2.url(), "outputs", std::to_string(id), "--to", to}, 60s);
  ASSERT_TRUE(cli.success()) << cli.describe() << "\n" << cli.out << cli.err;
  EXPECT_NE(cli.out.find("wrote 3 file(s)"), std::string::npos) << cli.out;
  EXPECT_TRUE(read_bytes(to + "/model/first.bin") == first_output_bytes())
      << "model/first.bin differs: " << read_bytes(to + "/model/first.bin").size() << " bytes";
  EXPECT_EQ(read_bytes(to + "/final.txt"), "steps=150\n");
  EXPECT_EQ(read_bytes(to + "/second-lease.txt").rfind("resumed after step ", 0), 0u);
  const auto listing =
      jobctl::testing::run_to_end({env_or_fail("JOBCTL_CLI"), "--server", d2.url(), "outputs", std::to_string(id)}, 60s);
  ASSERT_TRUE(listing.success()) << listing.out << listing.err;
  EXPECT_NE(listing.out.find("model/first.bin"), std::string::npos) << listing.out;
  EXPECT_NE(listing.out.find("262144"), std::string::npos) << listing.out;
  // The succeeded job's final checkpoint is kept with its outputs (the older ones go at the
  // checkpoint sweep, every 2 s).
  json kept;
  for (int i = 0; i < 100; ++i) {
    auto r = api.http().request("GET", "/v1/jobs/" + std::to_string(id) + "/checkpoints");
    ASSERT_TRUE(r);
    kept = json::parse(r->body, nullptr, false).value("checkpoints", json::array());
    if (kept.size() <= 1) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(kept.size(), 1u) << kept.dump();
  EXPECT_EQ(kept[0]["step"], 150) << kept.dump();

  // The job's log survived the SIGKILL whole, each line with the time its worker read it: the
  // first lease's line before the interruption, the second lease's two after it, in order.
  {
    auto r = api.http().request("GET", "/v1/jobs/" + std::to_string(id) + "/log");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const json log = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(log.is_object()) << r->body;
    std::vector<std::pair<int64_t, std::string>> lines;
    for (const json& l : log.value("lines", json::array()))
      lines.emplace_back(l.value("time_ms", int64_t{0}), l.value("text", ""));
    ASSERT_EQ(lines.size(), 3u) << log.dump(2);
    EXPECT_EQ(lines[0].second, "starting at step 0");
    EXPECT_EQ(lines[1].second.rfind("resuming after step ", 0), 0u) << lines[1].second;
    EXPECT_NE(lines[1].second.find("model/first.bin restored: True"), std::string::npos) << lines[1].second;
    EXPECT_EQ(lines[2].second, "done after 150 steps");
    auto job = api.get_job(id);
    ASSERT_TRUE(job);
    int64_t submitted_ms = 0, interrupted_ms = 0, succeeded_ms = 0;
    for (const json& ev : (*job)["events"]) {
      const std::string type = ev.value("type", "");
      if (type == "submitted") submitted_ms = ev.value("time_ms", int64_t{0});
      if ((type == "interrupted" || type == "preempted") && !interrupted_ms) interrupted_ms = ev.value("time_ms", int64_t{0});
      if (type == "succeeded") succeeded_ms = ev.value("time_ms", int64_t{0});
    }
    ASSERT_GT(submitted_ms, 0) << job->dump(2);
    ASSERT_GT(interrupted_ms, 0) << job->dump(2);
    ASSERT_GT(succeeded_ms, 0) << job->dump(2);
    EXPECT_LE(submitted_ms, lines[0].first);
    EXPECT_LE(lines[0].first, interrupted_ms);
    EXPECT_LE(interrupted_ms, lines[1].first);
    EXPECT_LE(lines[1].first, lines[2].first);
    EXPECT_LE(lines[2].first, succeeded_ms);
    // `jobctl logs --timestamps` prints them so.
    const auto logs = jobctl::testing::run_to_end(
        {env_or_fail("JOBCTL_CLI"), "--server", d2.url(), "logs", std::to_string(id), "--timestamps"}, 60s);
    ASSERT_TRUE(logs.success()) << logs.out << logs.err;
    EXPECT_NE(logs.out.find(format_utc_ms(lines[0].first) + " starting at step 0\n"), std::string::npos) << logs.out;
    EXPECT_NE(logs.out.find(format_utc_ms(lines[2].first) + " done after 150 steps\n"), std::string::npos) << logs.out;
  }

  ASSERT_TRUE(all_instances_ended(api, cloudsim, "outputs-e2e", 60s)) << instances(api).dump(2);
}

}  // namespace
}  // namespace jobctl::e2e
