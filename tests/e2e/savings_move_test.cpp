// A move for savings end to end (docs/cost-model.md, "Moves for savings"): jobctld with its
// provisioner on jobctl-cloudsim, one owned worker (a jobctl-worker whose one V100 is faked from
// tests/fixtures/nvidia-smi; it trains on the CPU), and the cloud instances' workers, all real.
//
// The only owned GPU is busy with a first job when a second one comes; the second starts on a
// cloudsim on-demand instance (its deadline cannot be met, so the earliest finish wins, and the
// owned GPU frees only after the first job). When the first job ends, the next re-evaluation
// finds the owned worker idle and the cloud job's remaining work far cheaper there: jobctld asks
// the job to move (event `move_requested`, target local, with the saving and the move's cost), its
// instance's worker checkpoints and gives it back, the owned worker resumes it, and it succeeds
// with final weights byte-identical to an uninterrupted run. The instance is stopped once idle;
// the job's segments show the on-demand time and the owned time.
//
// Fast: a synthetic MLP of seconds, re-evaluation every second, and a restart priced as the test
// machine does it (no warm-up, no fixed checkpoint time), so a move of seconds pays off.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "cloud/sim_provider.h"
#include "tests/e2e/cloud_support.h"
#include "tests/e2e/recovery_support.h"
#include "tests/support/temp_dir.h"

namespace jobctl::e2e {
namespace {

using Clock = std::chrono::steady_clock;

// The recovery job on one V100, `epochs` long (resources and placement are not part of the
// checkpoint fingerprint).
json v100_spec(const std::string& name, int epochs) {
  json j = json::parse(recovery_spec(name));
  j["train"]["epochs"] = epochs;
  j["resources"] = {{"gpu", "V100"}, {"gpus", 1}};
  return j;
}

TEST(Clouds, SavingsMoveTakesACloudJobToTheOwnedWorkerOnceItFrees) {
  const auto t0 = Clock::now();
  jobctl::testing::TempDir tmp;
  // The moved job: about 5,000 steps, several seconds on one core.
  json spec = v100_spec("savings-move", 10);
  const std::string reference = crc32c_hex(reference_final_checkpoint(tmp.path().string(), spec.dump()));
  // Its deadline has passed by the time it is placed: no option meets it, so the earliest finish
  // wins — an instance now (provisioning priced at 0 here) rather than the busy owned GPU later.
  spec["placement"] = {{"spot", "never"}, {"deadline_hours", 1e-6}};

  CloudSim sim(tmp.file("cloudsim"));
  ASSERT_FALSE(sim.url().empty());
  const std::string config = write_config(
      tmp, sim.url(), "savings-e2e",
      {{"cost", {{"local_gpus", {{{"gpu_model", "V100"}, {"count", 1}, {"purchase_usd", 2000}}}}}},
       {"placement",
        {{"clouds", {"aws"}},
         {"reevaluate_s", 1},
         {"provision_hours", 0},
         {"warmup_hours", 0},
         {"checkpoint_fixed_seconds", 0}}}});
  Daemon d(tmp.file("data"), "127.0.0.1:0", 5, {"--config", config});
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  cloud::SimProvider cloudsim({sim.url(), 5000});

  auto argv = worker_argv(d.url(), "owned-v100", tmp.file("owned"),
                          {"--fake-gpus", env_or_fail("JOBCTL_SOURCE_DIR") + "/tests/fixtures/nvidia-smi/v100-sxm2-16gb"});
  auto device = std::find(argv.begin(), argv.end(), "--device");  // a fake-GPU worker names no device
  argv.erase(device, device + 2);
  Process owned(argv);

  // The first job takes the owned GPU.
  json first_spec = v100_spec("owned-first", 3);
  first_spec["placement"] = {{"mode", "local"}};
  auto first = api.submit_job(first_spec.dump());
  ASSERT_TRUE(first) << first.error().message;
  const int64_t first_id = (*first)["id"];
  json job = wait_job(api, first_id, [](const json& j) { return progress_step(j) >= 1 || is_terminal(j); }, 60s);
  ASSERT_EQ(job.value("state", ""), "running") << job.dump(2) << "\n--- worker:\n" << owned.output();

  // The second goes to the cloud, on demand.
  auto submitted = api.submit_job(spec.dump());
  ASSERT_TRUE(submitted) << submitted.error().message;
  const int64_t id = (*submitted)["id"];
  job = wait_job(api, id, [](const json& j) { return progress_step(j) >= 1 || is_terminal(j); }, 60s);
  ASSERT_EQ(job.value("state", ""), "running") << job.dump(2) << "\n--- daemon:\n" << d.process().output();
  ASSERT_EQ(job["placement"]["chosen"]["option"], "on_demand") << job["placement"].dump(2);

  // The first job ends; the second moves to the owned worker and succeeds there.
  EXPECT_EQ(wait_job(api, first_id, is_terminal, 60s).value("state", ""), "succeeded");
  job = wait_job(api, id, is_terminal, 90s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n--- daemon:\n" << d.process().output();
  EXPECT_EQ(job["recoveries"], 0) << "a move is not a recovery";
  EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), reference) << "the moved job's final weights differ";
  EXPECT_EQ(job["placement"]["chosen"]["option"], "local") << job["placement"].dump(2);

  // The move's event: to the owned worker, with the saving it weighed against the move's cost.
  json move;
  for (const auto& e : job["events"])
    if (e.value("type", "") == "move_requested") move = e["detail"];
  ASSERT_TRUE(move.is_object()) << job["events"].dump(2);
  EXPECT_EQ(move.value("to", ""), "local") << move.dump();
  EXPECT_NE(move.value("reason", "").find("savings"), std::string::npos) << move.dump();
  ASSERT_TRUE(move.contains("saving_usd") && move.contains("move_cost_usd")) << move.dump();
  EXPECT_GT(move["saving_usd"].get<double>(), 1.5 * move["move_cost_usd"].get<double>()) << move.dump();
  EXPECT_NEAR(move["saving_usd"].get<double>(),
              move["remaining_here_usd"].get<double>() - move["remaining_there_usd"].get<double>(), 1e-9)
      << move.dump();
  const auto types = event_types(job);
  EXPECT_NE(std::find(types.begin(), types.end(), "moved"), types.end()) << job["events"].dump(2);

  // The instance it left is stopped; nothing is left running in the cloud.
  bool launched = false;
  for (const auto& i : instances(api))
    if (i["launched_for_job_id"] == id) launched = !i.value("spot", true);
  EXPECT_TRUE(launched) << instances(api).dump(2);
  ASSERT_TRUE(all_instances_ended(api, cloudsim, "savings-e2e", 60s)) << instances(api).dump(2);

  // The ledger: an on-demand segment, then an owned one; both billed and closed.
  auto final_job = api.get_job(id);
  ASSERT_TRUE(final_job) << final_job.error().message;
  job = *final_job;
  std::vector<std::string> options;
  for (const auto& seg : job["segments"]) {
    options.push_back(seg.value("option", ""));
    EXPECT_GT(seg.value("usd", 0.0), 0) << seg.dump();
    EXPECT_FALSE(seg.value("open", true)) << seg.dump();
  }
  EXPECT_EQ(options, (std::vector<std::string>{"on_demand", "local"})) << job["segments"].dump(2);

  std::cout << "savings move e2e: " << std::chrono::duration<double>(Clock::now() - t0).count()
            << " s; move: " << move.dump() << "\nsegments: " << job["segments"].dump() << "\n";
}

}  // namespace
}  // namespace jobctl::e2e
