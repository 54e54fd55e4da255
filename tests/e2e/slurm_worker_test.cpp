// jobctl-worker inside Slurm batch jobs (docs/slurm.md "The batch job"), end to end: a real
// one-node Slurm cluster (scripts/slurm-cluster.sh), jobctld, jobctl-worker and jobctl-train as
// real processes, the synthetic job of the recovery tests. Each Slurm job is the batch job
// slurm/batch_job.h builds, running one worker for one job (--max-jobs 1):
//   - it runs the job to success, exits, and Slurm's own record (jobcomp) says COMPLETED;
//   - `scancel` mid-run: Slurm's SIGTERM makes the worker checkpoint, upload and hand the job
//     back within KillWait; a second Slurm job resumes it and the final weights are
//     byte-identical to an uninterrupted run;
//   - `scontrol requeue` mid-run: the same, and the requeued Slurm job is cancelled before it can
//     run again (what jobctld does with a Slurm job it sees requeued).
// The workers run on the CPU (--device cpu --threads 1): bit-exact resumes need the same kind
// of machine, and the cluster's GPUs are fake.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "cloud/command_template.h"
#include "slurm/job_outcome.h"
#include "slurm/slurm_commands.h"
#include "tests/e2e/recovery_support.h"
#include "tests/e2e/slurm_test_fixture.h"
#include "tests/support/slurm_cluster.h"
#include "tests/support/temp_dir.h"
#include "tests/support/poll.h"

namespace jobctl::e2e {
namespace {

using jobctl::testing::SlurmCluster;
using slurm::Phase;

class SlurmWorkerTest : public SlurmClusterTest {
 protected:

  // A batch job running one worker for one job against `url`; its output in the cluster folder.
  int64_t launch_worker(const std::string& url, const std::string& name) {
    slurm::BatchJob j;
    j.name = name;
    j.comment = "jobctl:e2e";
    j.partition = "gpu";
    j.gpus = 1;
    j.time_limit_s = 600;
    j.signal_lead_s = 120;
    j.output = cluster_->dir() + "/" + name + "-%j.out";
    j.command = cloud::shell_quote(env_or_fail("JOBCTL_WORKER")) + " --server " + cloud::shell_quote(url) +
                " --name \"slurm-$SLURM_JOB_ID\" --trainer " + cloud::shell_quote(env_or_fail("JOBCTL_TRAIN")) +
                " --work-dir " + cloud::shell_quote(tmp_.file("work-" + name)) +
                " --device cpu --threads 1 --wait-s 2 --keep-work-dirs --max-jobs 1";
    auto id = slurm_->submit(j);
    EXPECT_TRUE(id) << id.error().message;
    return id ? *id : 0;
  }

  slurm::SlurmJob wait_slurm(int64_t id, Phase phase, std::chrono::seconds timeout) {
    slurm::SlurmJob seen;
    const bool reached = jobctl::testing::poll_until([&] {
      auto j = slurm_job(id);
      if (j) seen = *j;
      return j && slurm::outcome_of(*j).phase == phase;
    }, timeout, 100ms);
    if (reached) return seen;
    ADD_FAILURE() << "Slurm job " << id << " stayed " << seen.state << "\n" << cluster_->logs();
    return seen;
  }

  std::string worker_output(const std::string& name, int64_t slurm_id) {
    return read_bytes(cluster_->dir() + "/" + name + "-" + std::to_string(slurm_id) + ".out");
  }

  // Interrupts the worker's Slurm job mid-run with `interrupt`, then checks the checkpoint, the
  // hand-back and the bit-exact resume in a second Slurm job.
  void interrupt_and_resume(const std::function<void(int64_t)>& interrupt, const std::string& expected_event) {
    Daemon d(tmp_.file("data"));
    ASSERT_FALSE(d.url().empty());
    client::ApiClient api(d.url());
    auto submitted = api.submit_job(recovery_spec("slurm-" + expected_event));
    ASSERT_TRUE(submitted);
    const int64_t id = (*submitted)["id"];
    const int64_t first = launch_worker(d.url(), "first");
    json job = wait_job(api, id, [](const json& j) { return progress_step(j) >= 130 || is_terminal(j); }, 120s);
    ASSERT_GE(progress_step(job), 130) << job.dump(2) << "\n" << worker_output("first", first) << cluster_->logs();
    ASSERT_FALSE(is_terminal(job)) << "the job ended before it could be interrupted; make it longer";

    interrupt(first);
    job = wait_job(api, id, is_back_in_queue, 40s);
    ASSERT_TRUE(is_back_in_queue(job)) << job.dump(2) << "\n" << worker_output("first", first);
    const slurm::SlurmJob ended = wait_slurm(first, Phase::ended, 40s);
    const slurm::Outcome outcome = slurm::outcome_of(ended);
    EXPECT_EQ(outcome.event, expected_event);
    if (outcome.requeued) {
      ASSERT_TRUE(slurm_->cancel(first));  // it must not run again
    }
    std::smatch m;
    const std::string out_first = worker_output("first", first);
    ASSERT_TRUE(std::regex_search(out_first, m, std::regex("uploaded (signal|interrupt) checkpoint at step ([0-9]+)")))
        << out_first;
    const int64_t signal_step = std::stoll(m[2]);

    const int64_t second = launch_worker(d.url(), "second");
    job = wait_job(api, id, is_terminal, 180s);
    ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n" << worker_output("second", second);
    EXPECT_EQ(job["recoveries"], 1);
    EXPECT_NE(worker_output("second", second).find("resuming from the checkpoint at step " + std::to_string(signal_step)),
              std::string::npos)
        << worker_output("second", second);
    EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), *reference_crc_);
    EXPECT_EQ(slurm::outcome_of(wait_slurm(second, Phase::ended, 30s)).event, "slurm_completed");
    // The first Slurm job never ran again.
    auto again = slurm_job(first);
    ASSERT_TRUE(again);
    EXPECT_TRUE(again->ended()) << again->state;
    EXPECT_EQ(worker_output("first", first).find("jobctl-worker: registered", out_first.size()), std::string::npos);
  }

  jobctl::testing::TempDir tmp_;
};


TEST_F(SlurmWorkerTest, OneWorkerRunsOneJobAndSlurmAgrees) {
  Daemon d(tmp_.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  auto submitted = api.submit_job(recovery_spec("slurm-run"));
  ASSERT_TRUE(submitted);
  const int64_t id = (*submitted)["id"];
  const int64_t slurm_id = launch_worker(d.url(), "run");
  json job = wait_job(api, id, is_terminal, 180s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n" << worker_output("run", slurm_id);
  EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), *reference_crc_);
  EXPECT_TRUE(kept_final_checkpoint(tmp_.file("work-run"), id) == read_bytes(reference_dir_->file("out/final.ckpt")));
  // --max-jobs 1: the worker exits after its job, and so the Slurm job completes.
  const slurm::SlurmJob done = wait_slurm(slurm_id, Phase::ended, 30s);
  EXPECT_EQ(slurm::outcome_of(done).event, "slurm_completed") << worker_output("run", slurm_id);
  EXPECT_EQ(done.exit_code, 0);
  const std::string records = cluster_->job_records();
  EXPECT_NE(records.find("JobId=" + std::to_string(slurm_id) + " "), std::string::npos) << records;
  EXPECT_NE(records.find("Name=run JobState=COMPLETED"), std::string::npos) << records;
}

TEST_F(SlurmWorkerTest, ScancelMidRunCheckpointsAndTheResumeIsBitExact) {
  interrupt_and_resume([&](int64_t slurm_id) { ASSERT_TRUE(slurm_->cancel(slurm_id)); }, "slurm_cancelled");
}

TEST_F(SlurmWorkerTest, ScontrolRequeueMidRunCheckpointsAndTheResumeIsBitExact) {
  interrupt_and_resume([&](int64_t slurm_id) { ASSERT_TRUE(slurm_->requeue(slurm_id)); }, "slurm_requeued");
}

}  // namespace
}  // namespace jobctl::e2e
