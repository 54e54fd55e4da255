// Clouds end to end: jobctld with its provisioner on the `sim` driver,
// jobctl-cloudsim, and the instances' jobctl-worker / jobctl-train processes, all real, on loopback.
//
// SpotInterruption: placement puts a V100 job on a p3.2xlarge spot offer; the provisioner
// launches a cloudsim instance whose worker takes the job. Mid-job the instance is interrupted
// (POST /instances/{id}/interrupt): the notice endpoint answers {"action":"terminate",...}; the
// worker takes an emergency checkpoint, uploads it, hands the job back (preempted -> queued,
// recoveries = 1) and exits; the provisioner records the notice, stops the instance, and launches
// another for the job's new placement, whose worker resumes from the emergency checkpoint. The job
// succeeds with recoveries = 1 and final weights byte-identical to an uninterrupted run (the CRC32C
// of final.ckpt); every instance ends once idle; cloudsim's bill and jobctld's ledger agree.
// Printed figures: seconds from notice to checkpoint stored, and to the first resumed step.
//
// DeadlineMove: a spot job with a tight deadline runs on a spot instance; the deadline policy's
// safety net fires while it runs, and jobctld moves it to on-demand at once (not at its next
// interruption): the worker checkpoints on the heartbeat's word, the provisioner launches an
// on-demand instance, the job resumes there bit-exactly, and the spot instance is stopped.
//
// KilledDaemon: jobctld is killed with SIGKILL while a job runs on an instance, and an instance
// carrying the daemon's tag is launched behind its back (as if a launch had not been recorded).
// The restarted daemon reconciles: the running job carries on to success without a recovery, the
// unknown instance is adopted and stopped when idle, and no instance is left running.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>

#include "cloud/sim_provider.h"
#include "tests/e2e/cloud_support.h"
#include "tests/e2e/recovery_support.h"
#include "tests/support/temp_dir.h"

namespace jobctl::e2e {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The recovery job, on a V100 in the cloud (spot "auto": the cheapest, p3.2xlarge spot).
// Resources and placement are not part of the checkpoint fingerprint.
std::string cloud_spec(const std::string& name) {
  json j = json::parse(recovery_spec(name));
  j["resources"] = {{"gpu", "V100"}, {"gpus", 1}};
  j["placement"] = {{"mode", "cloud"}};
  return j.dump();
}

std::string reference_crc(jobctl::testing::TempDir& tmp) {
  return crc32c_hex(reference_final_checkpoint(tmp.path().string(), cloud_spec("reference")));
}

TEST(Clouds, SpotInterruptionWithNoticeResumesOnANewInstanceBitExactly) {
  jobctl::testing::TempDir tmp;
  const std::string reference = reference_crc(tmp);
  CloudSim sim(tmp.file("cloudsim"));
  ASSERT_FALSE(sim.url().empty());
  Daemon d(tmp.file("data"), "127.0.0.1:0", 30, {"--config", write_config(tmp, sim.url(), "spot-e2e")});
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  cloud::SimProvider cloudsim({sim.url(), 5000});

  auto submitted = api.submit_job(cloud_spec("spot-e2e"));
  ASSERT_TRUE(submitted) << submitted.error().message;
  const int64_t id = (*submitted)["id"];

  // Placed on spot; the provisioner launches an instance whose worker runs the job.
  json job = wait_job(api, id, [](const json& j) { return progress_step(j) >= 130 || is_terminal(j); }, 180s);
  ASSERT_GE(progress_step(job), 130) << job.dump(2) << "\n--- daemon:\n" << d.process().output()
                                     << "\n--- cloudsim:\n" << sim.process().output();
  ASSERT_EQ(job["placement"]["chosen"]["option"], "spot") << job["placement"].dump(2);
  json first;
  for (const auto& i : instances(api))
    if (i["job_id"] == id) first = i;
  ASSERT_TRUE(first.is_object()) << instances(api).dump(2);
  EXPECT_EQ(first["instance_type"], "p3.2xlarge");
  EXPECT_EQ(first["spot"], true);
  EXPECT_EQ(first["launched_for_job_id"], id);
  const std::string inst = first["id"];
  const std::string log_path = tmp.file("cloudsim/instances/" + inst + "/worker.log");
  const auto first_types = event_types(job);
  EXPECT_NE(std::find(first_types.begin(), first_types.end(), "instance_launched"), first_types.end());

  // The interruption.
  client::HttpClient http(sim.url());
  const auto notice_at = Clock::now();
  auto r = http.request("POST", "/instances/" + inst + "/interrupt", "{}");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;

  job = wait_job(api, id, [](const json& j) { return j.value("recoveries", 0) >= 1 || is_terminal(j); }, 30s);
  const double to_requeued = seconds_since(notice_at);
  ASSERT_EQ(job.value("recoveries", 0), 1) << job.dump(2) << "\n--- instance worker:\n" << read_bytes(log_path);
  auto cps = api.http().request("GET", "/v1/jobs/" + std::to_string(id) + "/checkpoints");
  ASSERT_TRUE(cps);
  const json stored = json::parse(cps->body);
  ASSERT_FALSE(stored["checkpoints"].empty()) << cps->body;
  const int64_t emergency_step = stored["checkpoints"][0]["step"];
  const std::string instance_log = read_bytes(log_path);
  EXPECT_TRUE(std::regex_search(instance_log, std::regex("uploaded (signal|interrupt|notice)[a-z ]* checkpoint at step " +
                                                         std::to_string(emergency_step))))
      << instance_log;
  bool preempted_by_notice = false;
  for (const auto& e : job["events"])
    if (e["type"] == "preempted" && e["detail"].value("reason", "").find("notice") != std::string::npos)
      preempted_by_notice = true;
  EXPECT_TRUE(preempted_by_notice) << job["events"].dump(2);

  // Re-placed on spot; the provisioner launches a second instance that resumes the job.
  json resumed = wait_job(api, id, [&](const json& j) {
    return is_terminal(j) || (j.value("state", "") == "running" && progress_step(j) > emergency_step);
  }, 120s);
  const double to_first_resumed_step = seconds_since(notice_at);
  job = wait_job(api, id, is_terminal, 240s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n--- daemon:\n" << d.process().output();
  EXPECT_EQ(job["recoveries"], 1);
  EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), reference);
  const auto types = event_types(job);
  EXPECT_EQ(std::count(types.begin(), types.end(), "instance_launched"), 2) << job["events"].dump(2);
  EXPECT_EQ(std::count(types.begin(), types.end(), "spot_notice"), 1) << job["events"].dump(2);
  json second;
  for (const auto& i : instances(api))
    if (i["id"] != inst && i["launched_for_job_id"] == id) second = i;
  ASSERT_TRUE(second.is_object()) << instances(api).dump(2);
  EXPECT_NE(read_bytes(tmp.file("cloudsim/instances/" + second["id"].get<std::string>() + "/worker.log"))
                .find("resuming from the checkpoint at step " + std::to_string(emergency_step)),
            std::string::npos);

  // Idle instances are stopped; nothing is left running in the cloud.
  ASSERT_TRUE(all_instances_ended(api, cloudsim, "spot-e2e", 60s)) << instances(api).dump(2);
  // jobctld's ledger billed each instance for the lifetime cloudsim reports (its launch and end
  // times, not the moments the provisioner's polls saw them), at the same price.
  auto bill = cloudsim.billing();
  ASSERT_TRUE(bill);
  const double cloud_usd = (*bill)["total_usd"].get<double>();
  double ledger_usd = 0;
  for (const auto& i : instances(api)) {
    ledger_usd += i["billed_usd"].get<double>();
    json billed;
    for (const auto& b : (*bill)["instances"])
      if (b["id"] == i["id"]) billed = b;
    ASSERT_TRUE(billed.is_object()) << i.dump() << "\n" << bill->dump(2);
    EXPECT_EQ(i["launched_ms"], billed["launched_ms"]) << i.dump() << "\n" << billed.dump();
    EXPECT_EQ(i["ended_ms"], billed["ended_ms"]) << i.dump() << "\n" << billed.dump();
    EXPECT_DOUBLE_EQ(i["usd_per_hour"].get<double>(), billed["usd_per_hour"].get<double>());
  }
  EXPECT_GT(cloud_usd, 0);
  EXPECT_GT(ledger_usd, 0);
  auto spend = api.http().request("GET", "/v1/reports/spend?group_by=job");
  ASSERT_TRUE(spend);
  ASSERT_EQ(spend->status, 200) << spend->body;

  std::cout << "spot e2e: emergency checkpoint at step " << emergency_step << "; notice -> checkpoint stored and job"
            << " requeued " << to_requeued << " s; notice -> first resumed step on a second instance "
            << to_first_resumed_step << " s; cloudsim billed $" << cloud_usd << " for "
            << (*bill)["billed_seconds"].get<int64_t>() << " simulated s; jobctld's ledger $" << ledger_usd
            << " (real seconds at the hourly price; cloudsim bills simulated seconds at F = 60)\n"
            << "spend report: " << spend->body << "\n";
  (void)resumed;
}

TEST(Clouds, DeadlinePolicyMovesARunningSpotJobToOnDemandAtOnce) {
  jobctl::testing::TempDir tmp;
  // 12 epochs: long enough that the move comes before the end on any machine.
  json spec = json::parse(cloud_spec("deadline-move"));
  spec["train"]["epochs"] = 12;
  const std::string reference = crc32c_hex(reference_final_checkpoint(tmp.path().string(), spec.dump()));
  // Due 14.4 s after submission with a changeover d of 5.4 s: Uniform Progress's safety net
  // (time left < work left + 2d) fires 3.6 s after submission, once the job runs on spot.
  spec["placement"]["deadline_hours"] = 0.004;
  CloudSim sim(tmp.file("cloudsim"));
  ASSERT_FALSE(sim.url().empty());
  const std::string config = write_config(tmp, sim.url(), "deadline-e2e",
                                          {{"placement", {{"reevaluate_s", 1}, {"provision_hours", 0.0015}}}});
  Daemon d(tmp.file("data"), "127.0.0.1:0", 30, {"--config", config});
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  cloud::SimProvider cloudsim({sim.url(), 5000});

  auto submitted = api.submit_job(spec.dump());
  ASSERT_TRUE(submitted) << submitted.error().message;
  const int64_t id = (*submitted)["id"];
  json job = wait_job(api, id, is_terminal, 300s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n--- daemon:\n" << d.process().output();
  EXPECT_EQ(job["recoveries"], 0) << "a move is not a recovery";
  EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), reference);
  const auto types = event_types(job);
  for (const char* t : {"deadline_policy", "move_requested", "moved"})
    EXPECT_NE(std::find(types.begin(), types.end(), t), types.end()) << t << "\n" << job["events"].dump(2);
  for (const auto& e : job["events"]) {
    if (e.value("type", "") == "move_requested") {
      EXPECT_EQ(e["detail"].value("to", ""), "on_demand") << e.dump();
    }
  }
  // It ran on a spot instance, then on an on-demand one; both are stopped once idle.
  bool spot = false, on_demand = false;
  for (const auto& i : instances(api))
    if (i["launched_for_job_id"] == id) (i.value("spot", false) ? spot : on_demand) = true;
  EXPECT_TRUE(spot && on_demand) << instances(api).dump(2);
  EXPECT_EQ(job["placement"]["chosen"]["option"], "on_demand") << job["placement"].dump(2);
  std::vector<std::string> options;
  for (const auto& seg : job["segments"]) options.push_back(seg.value("option", ""));
  EXPECT_EQ(options, (std::vector<std::string>{"spot", "on_demand"})) << job["segments"].dump(2);
  ASSERT_TRUE(all_instances_ended(api, cloudsim, "deadline-e2e", 60s)) << instances(api).dump(2);
}

TEST(Clouds, KilledDaemonReconcilesItsInstancesAndTheJobCarriesOn) {
  jobctl::testing::TempDir tmp;
  const std::string reference = reference_crc(tmp);
  CloudSim sim(tmp.file("cloudsim"));
  ASSERT_FALSE(sim.url().empty());
  const std::string config = write_config(tmp, sim.url(), "kill9-e2e");
  auto d1 = std::make_unique<Daemon>(tmp.file("data"), "127.0.0.1:0", 30, std::vector<std::string>{"--config", config});
  ASSERT_FALSE(d1->url().empty());
  const std::string url = d1->url();
  const int port = d1->port();
  cloud::SimProvider cloudsim({sim.url(), 5000});
  int64_t id = 0;
  {
    client::ApiClient api(url);
    auto submitted = api.submit_job(cloud_spec("kill9-cloud"));
    ASSERT_TRUE(submitted) << submitted.error().message;
    id = (*submitted)["id"];
    json job = wait_job(api, id, [](const json& j) { return progress_step(j) >= 150 || is_terminal(j); }, 180s);
    ASSERT_GE(progress_step(job), 150) << job.dump(2) << "\n--- daemon:\n" << d1->process().output();
  }
  ::kill(d1->process().pid(), SIGKILL);
  d1->process().stop(SIGKILL, 5s);
  // While jobctld is down, an instance with its tag appears that it never recorded.
  cloud::LaunchRequest leaked;
  leaked.offer.instance_type = "g4dn.xlarge";
  leaked.server_url = url;
  leaked.tag = "kill9-e2e";
  auto orphan = cloudsim.launch(leaked);
  ASSERT_TRUE(orphan) << orphan.error().message;
  std::this_thread::sleep_for(2s);

  Daemon d2(tmp.file("data"), "127.0.0.1:" + std::to_string(port), 30, {"--config", config});
  ASSERT_FALSE(d2.url().empty());
  client::ApiClient api(d2.url());
  json job = wait_job(api, id, is_terminal, 240s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n--- daemon:\n" << d2.process().output();
  EXPECT_EQ(job["recoveries"], 0) << job["events"].dump(2);  // the lease held across the restart
  EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), reference);
  const auto types = event_types(job);
  EXPECT_EQ(std::count(types.begin(), types.end(), "instance_launched"), 1) << job["events"].dump(2);

  // The orphan was adopted, then stopped when idle; every instance has ended in the cloud too.
  ASSERT_TRUE(all_instances_ended(api, cloudsim, "kill9-e2e", 60s)) << instances(api).dump(2);
  bool adopted = false;
  for (const auto& i : instances(api))
    if (i["id"] == orphan->id) adopted = i.value("reason", "").find("idle") != std::string::npos ||
                                         i.value("reason", "").find("adopted") != std::string::npos;
  EXPECT_TRUE(adopted) << instances(api).dump(2);
  EXPECT_NE(d2.process().output().find("adopted instance " + orphan->id), std::string::npos) << d2.process().output();
}

}  // namespace
}  // namespace jobctl::e2e
