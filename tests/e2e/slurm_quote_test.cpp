// Placement sees a real Slurm cluster (docs/slurm.md, "Partitions" and "Queue wait"): jobctld
// started with a `slurm` section naming a partition of scripts/slurm-cluster.sh's one-node cluster
// (two fake GPUs) quotes that partition beside the other options, as owned GPUs, with the queue
// wait it reads from `squeue --json` and `sinfo --json`: none while the GPUs are free, the running
// job's time left once a Slurm job holds them both. With no worker and no cloud provider beside
// it, the partition is what the quote chooses (jobctld would submit its batch job).
#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "client/http_client.h"
#include "slurm/slurm_commands.h"
#include "tests/e2e/recovery_support.h"
#include "tests/support/slurm_cluster.h"
#include "tests/support/temp_dir.h"
#include "tests/support/poll.h"

namespace jobctl::e2e {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The quote's row for the Slurm partition `name` (null when there is none).
json partition_row(client::HttpClient& http, int gpus, const std::string& name) {
  const json spec = {{"model", {{"kind", "mlp"}, {"hidden", {32}}}},
                     {"data", {{"dataset", "synthetic"}, {"samples", 256}}},
                     {"resources", {{"gpu", "V100"}, {"gpus", gpus}}}};
  auto q = http.request("POST", "/v1/quote", spec.dump());
  EXPECT_TRUE(q) << q.error().message;
  if (!q) return nullptr;
  EXPECT_EQ(q->status, 200) << q->body;
  const json quote = json::parse(q->body, nullptr, false);
  if (!quote.is_object()) return nullptr;
  for (const auto& c : quote["candidates"])
    if (c["option"] == "slurm" && c.value("partition", "") == name) return c;
  ADD_FAILURE() << "no row for partition " << name << ": " << quote.dump(2);
  return nullptr;
}

TEST(SlurmQuote, ThePartitionIsQuotedWithTheQueueWaitOfTheRealCluster) {
  jobctl::testing::SlurmCluster cluster("--gpus 2");
  JOBCTL_REQUIRE_SLURM(cluster);
  jobctl::testing::TempDir tmp;
  const std::string config = tmp.file("jobctld.json");
  std::ofstream(config) << json{{"slurm", {{"conf_file", cluster.conf()},
                                           {"poll_s", 1},
                                           {"partitions", {{{"name", "gpu"}, {"gpu_model", "V100"}}}}}}}.dump();
  Daemon d(tmp.file("data"), "127.0.0.1:0", 3, {"--config", config});
  ASSERT_FALSE(d.url().empty());
  client::HttpClient http(d.url());

  // Free GPUs: no wait; two GPUs a node (the GRES), so three never fit.
  json row = partition_row(http, 1, "gpu");
  ASSERT_TRUE(row.is_object());
  EXPECT_EQ(row["provider"], "slurm");
  EXPECT_EQ(row["label"], "slurm gpu V100 x1 (2-GPU node)");  // the job's GPU, the node's two apart
  EXPECT_EQ(row["gpus"], 1);
  EXPECT_EQ(row["machine_gpus"], 2);
  EXPECT_DOUBLE_EQ(row["queue_wait_hours"].get<double>(), 0.0) << row.dump(2);
  EXPECT_GT(row["usd_per_hour"].get<double>(), 0.0);  // the V100's board power at least
  EXPECT_FALSE(row.contains("rejection")) << row.dump(2);  // jobctld submits Slurm jobs: launchable
  EXPECT_EQ(partition_row(http, 3, "gpu")["rejection"], "too_few_gpus");

  // A Slurm job of someone else holds both GPUs for up to 10 minutes.
  slurm::SlurmCommands commands({"", cluster.conf(), 30});
  slurm::BatchJob hog;
  hog.name = "hog";
  hog.partition = "gpu";
  hog.gpus = 2;
  hog.time_limit_s = 600;
  hog.output = tmp.file("hog-%j.out");  // not the repository's folder
  hog.command = "sleep 600";
  auto id = commands.submit(hog);
  ASSERT_TRUE(id) << id.error().message;
  const bool running = jobctl::testing::poll_until([&] {
    bool seen = false;
    if (auto jobs = commands.jobs())
      for (const auto& j : *jobs) seen = seen || (j.id == *id && j.running());
    return seen;
  }, 30s, 200ms);
  ASSERT_TRUE(running) << cluster.logs();

  // Within a poll or two the quote waits for it: its time limit less the time it has run.
  double wait = 0;
  jobctl::testing::poll_until([&] {
    row = partition_row(http, 1, "gpu");
    if (row.is_object()) wait = row["queue_wait_hours"].get<double>();
    return wait != 0;
  }, 20s, 250ms);
  EXPECT_GT(wait, 9.0 / 60) << row.dump(2);
  EXPECT_LE(wait, 10.0 / 60 + 1e-9) << row.dump(2);
  EXPECT_NEAR(partition_row(http, 2, "gpu")["queue_wait_hours"].get<double>(), wait, 2.0 / 3600);
  ASSERT_TRUE(commands.cancel(*id));
}

}  // namespace
}  // namespace jobctl::e2e
