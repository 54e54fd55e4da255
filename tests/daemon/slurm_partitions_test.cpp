// The configured Slurm partitions as placement sees them (daemon/slurm/slurm_partitions.h), from
// `sinfo --json` and `squeue --json` output captured from scripts/slurm-cluster.sh's cluster
// (tests/slurm/data/: one node with two GPUs in partitions gpu and urgent, one job running on one
// GPU with a 2-minute limit).
#include "daemon/slurm/slurm_partitions.h"

#include <gtest/gtest.h>

#include <limits>
#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "slurm/slurm_json.h"
#include "tests/slurm/captured_output.h"
#include "tests/support/temp_dir.h"

namespace jobctl::daemon::slurm {
namespace {

std::string data(const std::string& name) { return ::jobctl::testing::captured_slurm_output(name); }

TEST(SlurmPartitions, EachConfiguredPartitionWithItsQueueWaitPerGpuCount) {
  auto nodes = ::jobctl::slurm::parse_sinfo_json(data("sinfo-mixed.json"));
  ASSERT_TRUE(nodes) << nodes.error().message;
  auto jobs = ::jobctl::slurm::parse_squeue_json(data("squeue-running.json"));
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 1u);
  const auto& running = jobs->front();

  SlurmSettings settings;
  settings.enabled = true;
  settings.partitions = {{"urgent", "A100", 0}, {"gpu", "V100", 0}, {"absent", "V100", 0}};
  const int64_t now_s = running.start_s + 60;  // a minute into its two
  const auto offered = partitions_for_placement(settings, *nodes, *jobs, now_s);
  // In the configuration's order; a partition the cluster does not report is left out.
  ASSERT_EQ(offered.size(), 2u);
  EXPECT_EQ(offered[0].name, "urgent");
  EXPECT_EQ(offered[0].gpu_model, "A100");
  EXPECT_EQ(offered[1].name, "gpu");
  EXPECT_EQ(offered[1].gpu_model, "V100");
  EXPECT_DOUBLE_EQ(offered[1].gpu_memory_gb, 16);
  for (const auto& p : offered) {
    EXPECT_EQ(p.gpus_per_node, 2) << p.name;  // gpu:fake:2
    ASSERT_EQ(p.wait_hours.size(), 2u) << p.name;
    EXPECT_DOUBLE_EQ(p.wait_hours[0], 0.0) << p.name;  // one GPU is free
    // Both GPUs once the running job reaches its limit (urgent shares gpu's node).
    EXPECT_NEAR(p.wait_hours[1], static_cast<double>(running.end_s - now_s) / 3600.0, 1e-9) << p.name;
  }

  // A count the configuration gives wins over the GRES's (a GRES jobctl cannot count).
  settings.partitions = {{"gpu", "V100", 4}};
  const auto configured = partitions_for_placement(settings, *nodes, *jobs, now_s);
  ASSERT_EQ(configured.size(), 1u);
  EXPECT_EQ(configured[0].gpus_per_node, 4);
  EXPECT_EQ(configured[0].wait_hours.size(), 4u);
  EXPECT_EQ(configured[0].machines, 1) << "one usable node: a gang of one node at most";

  // A node that stands in for several machines runs that many nodes of a gang.
  settings.partitions = {{"gpu", "V100", 0, 2}};
  const auto sharing = partitions_for_placement(settings, *nodes, *jobs, now_s);
  ASSERT_EQ(sharing.size(), 1u);
  EXPECT_EQ(sharing[0].tasks_per_node, 2);
  EXPECT_EQ(sharing[0].machines, 2);
  const auto gang_machines = feasibility_machines(settings, sharing);
  ASSERT_EQ(gang_machines.size(), 1u);
  EXPECT_EQ(gang_machines[0].gang_machines, 2);

  // Unusable nodes offer nothing.
  auto down = *nodes;
  for (auto& n : down) n.state = "down";
  EXPECT_TRUE(partitions_for_placement(settings, down, *jobs, now_s).empty());
}

// A cluster that cannot be reached is logged and polled again; the snapshot stays empty until it
// answers, and jobctld does not fail.
// Submits are refused only when nothing could run them: each configured partition is a machine,
// with the GPUs its nodes have, or the configured model and count when the cluster did not say.
TEST(SlurmPartitions, EachConfiguredPartitionIsAMachineForFeasibility) {
  auto nodes = ::jobctl::slurm::parse_sinfo_json(data("sinfo-mixed.json"));
  ASSERT_TRUE(nodes) << nodes.error().message;
  SlurmSettings settings;
  settings.enabled = true;
  settings.partitions = {{"gpu", "V100", 0}, {"absent", "A100", 4}};
  const auto machines = feasibility_machines(settings, partitions_for_placement(settings, *nodes, {}, 0));
  ASSERT_EQ(machines.size(), 2u);
  EXPECT_EQ(machines[0].name, "slurm partition gpu");
  ASSERT_NE(machines[0].gpu, nullptr);
  EXPECT_EQ(std::string(machines[0].gpu->name).rfind("V100", 0), 0u) << machines[0].gpu->name;
  EXPECT_EQ(machines[0].gpu_count, 2);  // the node's GRES
  EXPECT_FALSE(machines[0].cloud);      // owned GPUs
  EXPECT_EQ(machines[1].gpu_count, 4);  // not reported: as configured
  EXPECT_EQ(machines[1].gang_machines, std::numeric_limits<int>::max()) << "not read: no gang refused for its width";
  ASSERT_NE(machines[1].gpu, nullptr);
  EXPECT_GT(machines[1].memory_gib, 0);
}

TEST(SlurmPartitions, AnUnreachableClusterLeavesTheSnapshotEmpty) {
  SlurmSettings settings;
  settings.enabled = true;
  settings.bin_dir = "/nonexistent/slurm/bin";
  settings.timeout_s = 2;
  settings.partitions = {{"gpu", "V100", 0}};
  SystemClock clock;
  SlurmPartitions partitions(settings, clock);
  auto st = partitions.poll();
  EXPECT_FALSE(st);
  EXPECT_TRUE(partitions.snapshot().empty());
}

// `sinfo` and `squeue` as scripts in `bin` that print the captured output.
void captured_commands(const jobctl::testing::TempDir& bin) {
  const std::string src = std::getenv("JOBCTL_SOURCE_DIR") ? std::getenv("JOBCTL_SOURCE_DIR") : ".";
  for (const auto& [program, file] : {std::pair{"sinfo", "sinfo-mixed.json"}, std::pair{"squeue", "squeue-running.json"}}) {
    const std::string path = bin.file(program);
    std::ofstream(path) << "#!/bin/sh\ncat '" << src << "/tests/slurm/data/" << file << "'\n";
    ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
  }
}

// A partition where jobctld could not get a worker running is left out of placement's snapshots
// until the time it was set aside for (the launcher's kSetAsideMs), then offered again.
TEST(SlurmPartitions, ASetAsidePartitionIsLeftOutUntilItsTime) {
  jobctl::testing::TempDir bin;
  captured_commands(bin);
  SlurmSettings settings;
  settings.enabled = true;
  settings.bin_dir = bin.path().string();
  settings.partitions = {{"gpu", "V100", 0}, {"urgent", "A100", 0}};
  ManualClock clock(1'000'000);
  SlurmPartitions partitions(settings, clock);
  ASSERT_TRUE(partitions.poll());
  ASSERT_EQ(partitions.snapshot().size(), 2u);
  partitions.set_aside("gpu", 1'600'000);
  auto offered = partitions.snapshot();
  ASSERT_EQ(offered.size(), 1u);
  EXPECT_EQ(offered[0].name, "urgent");
  ASSERT_TRUE(partitions.poll());  // a new reading does not bring it back
  EXPECT_EQ(partitions.snapshot().size(), 1u);
  clock.advance_ms(600'000);
  EXPECT_EQ(partitions.snapshot().size(), 2u);
}

// The cluster is read on the poller's own thread while placement reads snapshots: here `sinfo`
// and `squeue` are scripts printing the captured output, polled every second while another
// thread takes snapshots (the TSan build checks the two threads share nothing unguarded).
TEST(SlurmPartitions, PolledOnItsOwnThreadWhileSnapshotsAreRead) {
  jobctl::testing::TempDir bin;
  captured_commands(bin);
  SlurmSettings settings;
  settings.enabled = true;
  settings.bin_dir = bin.path().string();
  settings.poll_s = 1;
  settings.partitions = {{"gpu", "V100", 0}};
  SystemClock clock;
  SlurmPartitions partitions(settings, clock);
  partitions.start();  // the first reading is there when start() returns
  ASSERT_EQ(partitions.snapshot().size(), 1u);
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) EXPECT_EQ(partitions.snapshot().size(), 1u);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // two more polls
  done = true;
  reader.join();
  partitions.stop();
  EXPECT_EQ(partitions.snapshot().front().name, "gpu");
}

}  // namespace
}  // namespace jobctl::daemon::slurm
