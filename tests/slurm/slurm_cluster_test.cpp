// The Slurm client commands against a real one-node cluster (scripts/slurm-cluster.sh: Debian's
// slurm-wlm, two fake GPUs through GRES, partitions `gpu` and `urgent`, the latter preempting the
// former). Each Slurm job runs a small shell payload that records its start, its GPUs and any
// SIGTERM in a file, as the worker would act on it.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <thread>

#include "slurm/batch_job.h"
#include "slurm/job_outcome.h"
#include "slurm/partition.h"
#include "slurm/queue_wait.h"
#include "slurm/slurm_commands.h"
#include "tests/support/slurm_cluster.h"
#include "tests/support/poll.h"

namespace jobctl::slurm {
namespace {

using namespace std::chrono_literals;
using jobctl::testing::SlurmCluster;

class SlurmClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new SlurmCluster(); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    JOBCTL_REQUIRE_SLURM(*cluster_);
    slurm_ = std::make_unique<SlurmCommands>(SlurmCommandsOptions{"", cluster_->conf(), 30});
    payload_ = cluster_->dir() + "/payload.sh";
    std::ofstream(payload_) << "#!/bin/sh\n"
                               "log=\"$(dirname \"$0\")/job-$SLURM_JOB_ID.log\"\n"
                               "echo \"start gpus=$CUDA_VISIBLE_DEVICES restarts=${SLURM_RESTART_COUNT:-0}\" >>\"$log\"\n"
                               "trap 'echo TERM >>\"$log\"; exit 0' TERM\n"
                               "[ -n \"$1\" ] && exit \"$1\"\n"
                               "while :; do sleep 0.1; done\n";
  }
  void TearDown() override {
    // Every job of a test ends with it (the next test sees an idle node).
    if (!slurm_) return;
    auto jobs = slurm_->jobs();
    if (!jobs) return;
    for (const auto& j : *jobs)
      if (!j.ended()) (void)slurm_->cancel(j.id);
    jobctl::testing::poll_until([&] {
      auto now = slurm_->jobs();
      if (!now) return false;
      for (const auto& j : *now)
        if (!j.ended()) return false;
      return true;
    }, 30s);
  }

  BatchJob job(const std::string& name, int gpus, const std::string& args = "") const {
    BatchJob j;
    j.name = name;
    j.comment = "jobctl:test";
    j.partition = "gpu";
    j.gpus = gpus;
    j.time_limit_s = 300;
    j.signal_lead_s = 60;
    j.output = cluster_->dir() + "/slurm-%j.out";
    j.command = "/bin/sh " + cloud::shell_quote(payload_) + (args.empty() ? "" : " " + args);
    return j;
  }

  std::optional<SlurmJob> find(int64_t id) const {
    auto jobs = slurm_->jobs();
    EXPECT_TRUE(jobs) << jobs.error().message;
    if (!jobs) return std::nullopt;
    for (auto& j : *jobs)
      if (j.id == id) return j;
    return std::nullopt;
  }

  // Waits until the job's outcome reaches `phase`; the job as last seen.
  SlurmJob wait_for(int64_t id, Phase phase, std::chrono::seconds timeout = 30s) {
    SlurmJob seen;
    const bool ok = jobctl::testing::poll_until([&] {
      auto j = find(id);
      if (!j) return false;
      seen = *j;
      return outcome_of(*j).phase == phase;
    }, timeout);
    EXPECT_TRUE(ok) << "Slurm job " << id << " stayed " << seen.state << " (" << seen.reason << ")\n"
                    << cluster_->logs();
    return seen;
  }

  std::string payload_log(int64_t id) const {
    std::ifstream in(cluster_->dir() + "/job-" + std::to_string(id) + ".log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  bool payload_saw(int64_t id, const std::string& text, std::chrono::milliseconds timeout = 40s) const {
    return jobctl::testing::poll_until([&] { return payload_log(id).find(text) != std::string::npos; }, timeout);
  }

  static SlurmCluster* cluster_;
  std::unique_ptr<SlurmCommands> slurm_;
  std::string payload_;
};

SlurmCluster* SlurmClusterTest::cluster_ = nullptr;

TEST_F(SlurmClusterTest, PartitionsAndGpusComeFromTheNodeList) {
  auto nodes = slurm_->nodes();
  ASSERT_TRUE(nodes) << nodes.error().message;
  const auto parts = partitions_from_nodes(*nodes);
  ASSERT_EQ(parts.size(), 2u);
  for (const auto& p : parts) {
    EXPECT_EQ(p.gpus, 2) << p.name;
    EXPECT_EQ(p.gpus_per_node, 2);
    EXPECT_EQ(p.gpu_type, "fake");
    EXPECT_EQ(p.usable_nodes, 1);
  }
  EXPECT_EQ(parts[0].name, "gpu");
  EXPECT_EQ(parts[1].name, "urgent");
}

TEST_F(SlurmClusterTest, BatchJobGetsItsGpusAndScancelSignalsIt) {
  auto id = slurm_->submit(job("jobctl-job-1", 1));
  ASSERT_TRUE(id) << id.error().message;
  const SlurmJob running = wait_for(*id, Phase::running);
  EXPECT_EQ(running.name, "jobctl-job-1");
  EXPECT_EQ(running.comment, "jobctl:test");
  EXPECT_EQ(running.partition, "gpu");
  EXPECT_EQ(running.gpus, 1);
  ASSERT_TRUE(running.time_limit_s);
  EXPECT_EQ(*running.time_limit_s, 300);
  ASSERT_TRUE(payload_saw(*id, "start gpus=0"));  // GRES set CUDA_VISIBLE_DEVICES

  ASSERT_TRUE(slurm_->cancel(*id));
  EXPECT_TRUE(payload_saw(*id, "TERM")) << payload_log(*id);
  const SlurmJob ended = wait_for(*id, Phase::ended);
  const Outcome o = outcome_of(ended);
  EXPECT_EQ(o.event, "slurm_cancelled");
  EXPECT_FALSE(o.requeued);
  // Cancelling again, or a job Slurm never had, is not an error.
  EXPECT_TRUE(slurm_->cancel(*id));
  EXPECT_TRUE(slurm_->cancel(999999));
}

TEST_F(SlurmClusterTest, ScontrolRequeueIsSeenAsARequeue) {
  auto id = slurm_->submit(job("jobctl-job-2", 1));
  ASSERT_TRUE(id) << id.error().message;
  wait_for(*id, Phase::running);
  ASSERT_TRUE(payload_saw(*id, "start"));
  ASSERT_TRUE(slurm_->requeue(*id));
  EXPECT_TRUE(payload_saw(*id, "TERM")) << payload_log(*id);
  const SlurmJob seen = wait_for(*id, Phase::ended);
  EXPECT_EQ(seen.restart_count, 1);
  const Outcome o = outcome_of(seen);
  EXPECT_EQ(o.event, "slurm_requeued");
  EXPECT_TRUE(o.requeued);  // Slurm would run it again: jobctld cancels it
  ASSERT_TRUE(slurm_->cancel(*id));
  ASSERT_TRUE(jobctl::testing::poll_until([&] { auto j = find(*id); return j && j->ended(); }, 30s));
}

TEST_F(SlurmClusterTest, PreemptionByAHigherTierPartition) {
  auto low = slurm_->submit(job("jobctl-job-3", 2));
  ASSERT_TRUE(low) << low.error().message;
  wait_for(*low, Phase::running);
  ASSERT_TRUE(payload_saw(*low, "start"));
  BatchJob urgent = job("urgent-work", 1);
  urgent.partition = "urgent";
  auto high = slurm_->submit(urgent);
  ASSERT_TRUE(high) << high.error().message;
  EXPECT_TRUE(payload_saw(*low, "TERM")) << payload_log(*low);
  const SlurmJob seen = wait_for(*low, Phase::ended);
  EXPECT_EQ(seen.restart_count, 1);
  const Outcome o = outcome_of(seen);
  // Slurm shows the preemption time only while the preempted job's processes end (COMPLETING);
  // once it is PENDING again it looks like any requeue.
  if (seen.state == "COMPLETING") EXPECT_EQ(o.event, "slurm_preempted");
  else EXPECT_EQ(o.event, "slurm_requeued") << "state " << seen.state;
  EXPECT_TRUE(o.requeued);
  wait_for(*high, Phase::running);
}

TEST_F(SlurmClusterTest, ExitCodesAndSlurmsOwnRecord) {
  auto ok = slurm_->submit(job("jobctl-job-4", 0, "0"));
  auto bad = slurm_->submit(job("jobctl-job-5", 0, "3"));
  ASSERT_TRUE(ok && bad);
  const SlurmJob done = wait_for(*ok, Phase::ended);
  EXPECT_EQ(outcome_of(done).event, "slurm_completed");
  EXPECT_EQ(done.exit_code, 0);
  const SlurmJob failed = wait_for(*bad, Phase::ended);
  EXPECT_EQ(outcome_of(failed).event, "slurm_failed");
  EXPECT_EQ(failed.exit_code, 3);
  const std::string records = cluster_->job_records();
  EXPECT_NE(records.find("JobId=" + std::to_string(*ok) + " "), std::string::npos) << records;
  EXPECT_NE(records.find("Name=jobctl-job-4 JobState=COMPLETED"), std::string::npos) << records;
  EXPECT_NE(records.find("Name=jobctl-job-5 JobState=FAILED"), std::string::npos) << records;
}

TEST_F(SlurmClusterTest, QueueWaitFollowsTheRunningJobs) {
  auto nodes = slurm_->nodes();
  ASSERT_TRUE(nodes);
  const Partition gpu = partitions_from_nodes(*nodes)[0];
  auto jobs = slurm_->jobs();
  ASSERT_TRUE(jobs);
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_EQ(estimate_queue_wait(gpu, *jobs, 1, now, 3600).wait_s, 0);

  auto id = slurm_->submit(job("jobctl-job-6", 2));
  ASSERT_TRUE(id);
  const SlurmJob running = wait_for(*id, Phase::running);
  jobs = slurm_->jobs();
  ASSERT_TRUE(jobs);
  const QueueWait w = estimate_queue_wait(gpu, *jobs, 1, running.start_s, 3600);
  EXPECT_EQ(w.running_jobs, 1);
  EXPECT_EQ(w.gpus_in_use, 2);
  EXPECT_EQ(w.wait_s, 300);  // both GPUs held until the 5-minute limit
  // A pending 2-GPU job of 10 minutes goes first.
  BatchJob next = job("jobctl-job-7", 2);
  next.time_limit_s = 600;
  ASSERT_TRUE(slurm_->submit(next));
  jobs = slurm_->jobs();
  ASSERT_TRUE(jobs);
  const QueueWait after = estimate_queue_wait(gpu, *jobs, 1, running.start_s, 3600);
  EXPECT_EQ(after.pending_jobs, 1);
  EXPECT_EQ(after.wait_s, 900);
}

TEST_F(SlurmClusterTest, SignalArrivesBeforeTheTimeLimit) {
  // --time=1 --signal=B:TERM@50: Slurm signals the batch process (the exec'ed payload) about 10 s
  // in (up to a minute early: its event resolution), well before it is killed at the limit.
  BatchJob j = job("jobctl-job-8", 1);
  j.time_limit_s = 60;
  j.signal_lead_s = 50;
  auto id = slurm_->submit(j);
  ASSERT_TRUE(id);
  wait_for(*id, Phase::running);
  EXPECT_TRUE(payload_saw(*id, "TERM", 60s)) << payload_log(*id);
  // The payload exits at the signal: the job completes inside its limit.
  const SlurmJob seen = wait_for(*id, Phase::ended);
  EXPECT_EQ(outcome_of(seen).event, "slurm_completed");
}

TEST_F(SlurmClusterTest, RefusedRequestsAreClearErrors) {
  BatchJob j = job("jobctl-job-9", 1);
  j.partition = "nope";
  auto r = slurm_->submit(j);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(r.error().message.find("Invalid partition"), std::string::npos) << r.error().message;
  j = job("jobctl-job-9", 3);  // the node has two
  r = slurm_->submit(j);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("node configuration is not available"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace jobctl::slurm
