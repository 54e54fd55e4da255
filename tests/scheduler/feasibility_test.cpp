#include "scheduler/feasibility.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "cost/workload.h"
#include "train/spec/job_spec.h"
#include "train/spec/model_stats.h"

namespace jobctl::scheduler {
namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

Machine machine(std::string name, const char* gpu, int count, double mem, bool cloud = false) {
  Machine m;
  m.name = std::move(name);
  m.gpu = cost::find_gpu(gpu);
  m.gpu_name = gpu;
  m.gpu_count = count;
  m.memory_gib = mem;
  m.cloud = cloud;
  return m;
}

Job job(const std::string& gpu, int gpus = 1, double vram_gib = 2) {
  Job j;
  j.gpu = gpu;
  j.workload.gpus = gpus;
  j.workload.vram_bytes_per_gpu = static_cast<int64_t>(vram_gib * kBytesPerGiB);
  return j;
}

// A 4 x V100 box, 2 x RTX 4090, a CPU worker, and the aws p5 (8 x H100) offer.
std::vector<Machine> fleet() {
  return {machine("worker 1 (v100x4)", "V100", 4, 15.8), machine("worker 2 (rtx)", "RTX4090", 2, 24),
          machine("worker 3 (cpu)", "cpu", 1, 31), machine("aws:p5.48xlarge", "H100", 8, 80, true)};
}

TEST(Feasibility, WhatSomethingCanRunIsAccepted) {
  const auto f = fleet();
  for (const Job& j : {job("V100", 4), job("rtx 4090", 2), job("cpu"), job("any"), job("H100", 8, 70), job("H100-SXM"),
                       job("any", 1, 30)})  // a CPU with 31 GiB holds what no GPU does
    EXPECT_TRUE(check_feasible(j, f)) << j.gpu << " x" << j.workload.gpus;
}

// No machine on the side a job may use (a daemon just started: its workers not registered yet)
// is no evidence against the job: it is accepted and waits. A local job with only cloud offers
// known, or any job with nothing known at all.
TEST(Feasibility, NoMachineOnTheJobsSideRefusesNothing) {
  Job local = job("GH200");
  local.mode = train::PlacementMode::local;
  EXPECT_TRUE(check_feasible(local, std::vector<Machine>{machine("aws:p5.48xlarge", "H100", 8, 80, true)}));
  EXPECT_TRUE(check_feasible(job("any", 64, 1000), std::vector<Machine>{}));
  // One worker on its side is a fleet: judged.
  EXPECT_FALSE(check_feasible(local, std::vector<Machine>{machine("worker 1", "V100", 1, 15.8)}));
}

TEST(Feasibility, TheRefusalNamesTheFieldAndTheReason) {
  const auto f = fleet();
  auto model = check_feasible(job("GH200"), f);
  ASSERT_FALSE(model);
  EXPECT_EQ(model.error().field, "resources.gpu");
  EXPECT_NE(model.error().message.find("no registered worker and no catalog offer has a GH200"), std::string::npos)
      << model.error().message;
  EXPECT_NE(model.error().message.find("V100-16GB x4"), std::string::npos) << model.error().message;
  EXPECT_NE(model.error().message.find("queue_if_unplaceable"), std::string::npos);

  auto count = check_feasible(job("H100", 16), f);
  ASSERT_FALSE(count);
  EXPECT_EQ(count.error().field, "resources.gpus");
  EXPECT_NE(count.error().message.find("asks for 16 x H100"), std::string::npos) << count.error().message;
  EXPECT_NE(count.error().message.find("more than 8 (aws:p5.48xlarge)"), std::string::npos) << count.error().message;

  auto memory = check_feasible(job("any", 1, 137.5), f);
  ASSERT_FALSE(memory);
  EXPECT_EQ(memory.error().field, "resources.gpu");
  EXPECT_NE(memory.error().message.find("needs 137.50 GiB of memory per GPU"), std::string::npos) << memory.error().message;
  EXPECT_NE(memory.error().message.find("80.00 GiB (aws:p5.48xlarge, H100-SXM)"), std::string::npos)
      << memory.error().message;

  // The placement mode narrows the machines: a local-only H100 job has none.
  Job local = job("H100");
  local.mode = train::PlacementMode::local;
  auto l = check_feasible(local, f);
  ASSERT_FALSE(l);
  EXPECT_NE(l.error().message.find("no registered worker has a H100"), std::string::npos) << l.error().message;
  Job cloud_cpu = job("cpu");
  cloud_cpu.mode = train::PlacementMode::cloud;
  EXPECT_FALSE(check_feasible(cloud_cpu, f));
  // A machine that reported no memory is assumed to fit what its model could hold (a V100 has
  // 32 GB at most: 500 GiB is refused by the model's own memory, whatever the machine reports).
  const std::vector<Machine> unknown_memory{machine("worker 9", "V100", 1, 0)};
  EXPECT_TRUE(check_feasible(job("V100", 1, 30), unknown_memory));
  EXPECT_FALSE(check_feasible(job("V100", 1, 500), unknown_memory));
}

}  // namespace
}  // namespace jobctl::scheduler

namespace jobctl::scheduler {
namespace {

// A gang needs as many registered workers of one kind as it has nodes; cloud offers and Slurm
// partitions run a job on one machine. Before any worker is registered nothing is judged.
TEST(Feasibility, AGangNeedsThatManyWorkersOfOneKind) {
  Machine cpu = machine("worker 3 (cpu)", "cpu", 1, 31);
  cpu.gang_machines = 2;
  Machine v100 = machine("worker 1 (v100x4)", "V100", 4, 15.8);
  v100.gang_machines = 1;
  const std::vector<Machine> f = {cpu, v100, machine("aws:p5.48xlarge", "H100", 8, 80, true)};
  Job two = job("cpu");
  two.nodes = 2;
  EXPECT_TRUE(check_feasible(two, f));
  Job three = job("cpu");
  three.nodes = 3;
  auto refused = check_feasible(three, f);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().field, "resources.nodes");
  EXPECT_NE(refused.error().message.find("needs 3 machines at once; the most of one kind registered is 2"),
            std::string::npos)
      << refused.error().message;
  Job on_cloud = job("H100");
  on_cloud.nodes = 2;
  auto cloud = check_feasible(on_cloud, f);
  ASSERT_FALSE(cloud);
  EXPECT_EQ(cloud.error().field, "resources.nodes");
  EXPECT_NE(cloud.error().message.find("instances of one cloud offer up to cloud.max_instances"), std::string::npos)
      << cloud.error().message;
  // A Slurm partition of V100 nodes running 4 tasks at once takes a 3-node V100 gang.
  Machine partition = machine("slurm partition gpu", "V100", 2, 15.8);
  partition.gang_machines = 4;
  Job v100_gang = job("V100");
  v100_gang.nodes = 3;
  EXPECT_FALSE(check_feasible(v100_gang, f));
  EXPECT_TRUE(check_feasible(v100_gang, std::vector<Machine>{cpu, v100, partition}));
  EXPECT_TRUE(check_feasible(on_cloud, std::vector<Machine>{machine("aws:p5.48xlarge", "H100", 8, 80, true)}))
      << "no worker registered yet: nothing to judge a gang by";
}

// A launchable cloud offer holds a gang of up to cloud.max_instances instances (its
// gang_machines): wider gangs are refused with the cap; with no cloud, owned workers decide.
TEST(Feasibility, ACloudOfferHoldsAGangOfUpToMaxInstances) {
  Machine cpu = machine("worker 3 (cpu)", "cpu", 1, 31);
  cpu.gang_machines = 1;
  Machine p5 = machine("aws:p5.48xlarge", "H100", 8, 80, true);
  p5.gang_machines = 4;
  const std::vector<Machine> f = {cpu, p5};
  Job four = job("H100", 8);
  four.nodes = 4;
  EXPECT_TRUE(check_feasible(four, f));
  Job any = job("any");
  any.nodes = 3;
  EXPECT_TRUE(check_feasible(any, f)) << "the CPU worker is one, the cloud offer holds three";
  Job five = job("H100", 8);
  five.nodes = 5;
  auto refused = check_feasible(five, f);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().field, "resources.nodes");
  EXPECT_NE(refused.error().message.find("needs 5 machines at once; the most of one kind is 4 instances of "
                                         "aws:p5.48xlarge (cloud.max_instances)"),
            std::string::npos)
      << refused.error().message;
  // Owned workers only (no cloud configured): a CPU gang of 2 on one CPU worker is refused.
  Job two = job("cpu");
  two.nodes = 2;
  auto owned = check_feasible(two, std::vector<Machine>{cpu});
  ASSERT_FALSE(owned);
  EXPECT_NE(owned.error().message.find("the most of one kind registered is 1"), std::string::npos)
      << owned.error().message;
}

}  // namespace
}  // namespace jobctl::scheduler

namespace jobctl::scheduler {
namespace {

// A command job describing a full fine-tune of a Llama-2-13B shape (40 layers, hidden 5120, 40
// heads, vocabulary 32,000, seq 2048, bf16, AdamW, no recomputation, no ZeRO) on `gpus` x `gpu`.
Job thirteen_b(const std::string& gpu, const std::string& gpus, int zero_stage = 0) {
  auto spec = train::parse_job_spec(R"({"command": ["python3", "finetune.py"], "resources": {"gpu": ")" + gpu +
                                    R"(", "gpus": )" + gpus + R"(}, "estimate": {"model": {"layers": 40,
    "hidden": 5120, "heads": 40, "vocab": 32000, "seq_len": 2048, "tokens": 1000000000, "zero_stage": )" +
                                    std::to_string(zero_stage) + "}}}");
  EXPECT_TRUE(spec) << spec.error().message;
  return job_from_spec("ft13b", *spec, train::model_stats(*spec), 0);
}

std::string gib_text(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / kBytesPerGiB);
  return buf;
}

// Whether a workload fits a GPU model is a fact of the model, not of the fleet: with no machine
// known at all (no worker registered yet, no cloud) a 13B full fine-tune on one RTX 4090 is
// refused with the memory it needs per GPU and what the GPU has; so is a count the model's
// largest variant cannot hold, and an "auto" job no count up to an 8-GPU box holds. What some
// count of the model holds is accepted and waits for a machine.
TEST(Feasibility, AWorkloadThatNoVariantOfItsGpuModelHoldsIsRefusedWithNoFleet) {
  const std::vector<Machine> none;
  const Job one = thirteen_b("RTX 4090", "1");
  ASSERT_GT(one.workload.vram_bytes_per_gpu, 200 * kBytesPerGiB);  // model state alone is 16 x 13B
  auto refused = check_feasible(one, none);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().field, "resources.gpus");
  EXPECT_NE(refused.error().message.find("needs " + gib_text(static_cast<double>(one.workload.vram_bytes_per_gpu)) +
                                         " per GPU"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("an RTX4090 has 24.00 GiB"), std::string::npos) << refused.error().message;

  // A100 names both variants: judged by the 80 GB one. ZeRO-3 on 8 of them holds it; on 2 not.
  EXPECT_TRUE(check_feasible(thirteen_b("A100", "8", 3), none));
  auto two = check_feasible(thirteen_b("A100", "2", 3), none);
  ASSERT_FALSE(two);
  EXPECT_NE(two.error().message.find("an A100 has 80.00 GiB"), std::string::npos) << two.error().message;
  EXPECT_NE(two.error().message.find("with ZeRO-3 on 2 GPUs"), std::string::npos) << two.error().message;

  // "auto": without ZeRO every GPU holds the whole model state, so no count of a 4090 does; the
  // figures are those of the widest box (8).
  const Job any_count = thirteen_b("RTX4090", "\"auto\"");
  auto never = check_feasible(any_count, none);
  ASSERT_FALSE(never);
  EXPECT_EQ(never.error().field, "resources.gpus");
  EXPECT_NE(never.error().message.find("fits no count of RTX4090 GPUs up to 8: it needs " +
                                       gib_text(static_cast<double>(cost::vram_bytes_for(any_count.workload, 8)))),
            std::string::npos)
      << never.error().message;
  EXPECT_NE(never.error().message.find("has 24.00 GiB"), std::string::npos) << never.error().message;
  EXPECT_TRUE(check_feasible(thirteen_b("H100", "\"auto\"", 3), none));
  // "any" and "cpu" name no model: nothing to judge without a fleet.
  EXPECT_TRUE(check_feasible(thirteen_b("any", "1"), none));

  // The same refusals with a fleet that has none of the model (cloud offers of other GPUs).
  const std::vector<Machine> other{machine("aws:p5.48xlarge", "H100", 8, 80, true)};
  Job local = one;
  local.mode = train::PlacementMode::local;
  EXPECT_FALSE(check_feasible(local, other));
}

// A job in an image is refused when no machine runs containers (field image), or when one of its
// mounts is under no folder a container-running machine allows (field mounts[i]); a plain job is
// not held to either.
TEST(Feasibility, AJobInAnImageNeedsAMachineThatRunsContainersAndAllowsItsMounts) {
  auto f = fleet();
  Job j = job("any");
  j.command = true;
  j.image = true;
  auto none = check_feasible(j, f);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().field, "image");
  EXPECT_NE(none.error().message.find("--container-runtime podman"), std::string::npos) << none.error().message;

  f[1].containers = {true, {{"/srv/data", false}, {"/scratch", true}}};
  EXPECT_TRUE(check_feasible(j, f));
  j.mounts = {{"/srv/data/fmnist", "/data", false}, {"/scratch/run", "/out", true}};
  EXPECT_TRUE(check_feasible(j, f));
  j.mounts.push_back({"/srv/data/imagenet", "/in", true});
  auto writable = check_feasible(j, f);
  ASSERT_FALSE(writable);
  EXPECT_EQ(writable.error().field, "mounts[2]");
  EXPECT_NE(writable.error().message.find("/srv/data/imagenet, writable"), std::string::npos) << writable.error().message;
  EXPECT_NE(writable.error().message.find("allowed: /srv/data, /scratch:rw"), std::string::npos) << writable.error().message;
  j.mounts = {{"/home/alice", "/h", false}};
  auto outside = check_feasible(j, f);
  ASSERT_FALSE(outside);
  EXPECT_EQ(outside.error().field, "mounts[0]");

  Job plain = job("any");
  plain.command = true;
  EXPECT_TRUE(check_feasible(plain, fleet()));
}

}  // namespace
}  // namespace jobctl::scheduler
