// jobctld submits the Slurm jobs itself (docs/slurm.md, "How jobctld submits"), end to end: a
// real one-node Slurm cluster (scripts/slurm-cluster.sh), jobctld with a `slurm` section, and
// jobctl-worker and jobctl-train as real processes inside the batch jobs jobctld submits; the
// synthetic job of the recovery tests.
//   - a job placed on the partition because it is the cheapest option (an idle local worker of a
//     dearer GPU beside it) gets one sbatch from jobctld, runs there and succeeds; Slurm's own
//     record (jobcomp) says the job jobctld named after it COMPLETED, and jobctld saw it end;
//   - a job asking for the partition's GPU model is accepted (the partition counts at submit), and
//     cancelling it in jobctl cancels its Slurm job;
//   - `scancel` of that Slurm job mid-run: the worker checkpoints and hands the job back, jobctld
//     records the cancel, placement places the job again (the partition is still cheapest) and a
//     fresh Slurm job resumes it: final weights byte-identical to an uninterrupted run;
//   - `scontrol requeue` likewise, and jobctld cancels the requeued Slurm job so it never runs
//     again (no wait for Slurm's BeginTime, no second worker for the job);
//   - a gang of two nodes (examples/pytorch/train_ddp.py, torch.distributed over gloo) is one
//     sbatch of two tasks on the one node (tasks_per_node 2), srun starting a worker per task:
//     the two workers are its two nodes, and its final weights equal the program's 2-process run
//     outside jobctl;
//   - jobctld killed (SIGKILL) mid-run and restarted on its port: it reconciles with Slurm's
//     queue, keeps the running Slurm job (no second sbatch) and the job finishes in it; the same
//     with its record of the Slurm job lost (it adopts the job by its comment); and with the Slurm
//     job cancelled while jobctld was down (the job is requeued and resumed in a fresh one).
// Workers train on the CPU (--device cpu --threads 1): bit-exact resumes need the same kind of
// machine, and the cluster's GPUs are fake.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

#include <sqlite3.h>

#include "slurm/job_outcome.h"
#include "slurm/slurm_commands.h"
#include "tests/e2e/ddp_support.h"
#include "tests/e2e/recovery_support.h"
#include "tests/e2e/slurm_test_fixture.h"
#include "tests/support/ci.h"
#include "tests/support/slurm_cluster.h"
#include "tests/support/temp_dir.h"
#include "tests/support/poll.h"

namespace jobctl::e2e {
namespace {

using jobctl::testing::SlurmCluster;

// The Slurm job ids of a job's `slurm_submitted` events, in order.
std::vector<int64_t> submitted_slurm_jobs(const json& job) {
  std::vector<int64_t> out;
  for (const auto& e : job.value("events", json::array()))
    if (e.value("type", "") == "slurm_submitted") out.push_back(e["detail"].value("slurm_job_id", int64_t{0}));
  return out;
}

bool has_event(const json& job, const std::string& type) {
  const auto types = event_types(job);
  return std::find(types.begin(), types.end(), type) != types.end();
}

class SlurmLaunchTest : public SlurmClusterTest {
 protected:
  void SetUp() override {
    SlurmClusterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // A tag of its own per test: the tests share the cluster, and each jobctld numbers its jobs from 1.
    static int tests = 0;
    tag_ = "e2e-launch-" + std::to_string(++tests);
    // The partition's V100s cost next to nothing (bought for $0, a watt of power); an idle local
    // worker's H100 is priced at its board power: the partition is the cheapest option.
    const json config = {
        {"cost",
         {{"local_gpus", {{{"gpu_model", "V100"}, {"count", 2}, {"purchase_usd", 0}, {"power_kw", 0.001}}}}}},
        {"slurm",
         {{"conf_file", cluster_->conf()},
          {"poll_s", 1},
          {"tag", tag_},
          {"partitions", {{{"name", "gpu"}, {"gpu_model", "V100"}}}},
          {"worker_command", env_or_fail("JOBCTL_WORKER") + " --server {server} --trainer " +
                                 env_or_fail("JOBCTL_TRAIN") + " --work-dir " + tmp_.file("work") +
                                 " --device cpu --threads 1 --wait-s 2 --keep-work-dirs"},
          {"sbatch_options", {"--output=" + tmp_.file("slurm-%j.out")}},
          // The synthetic job's estimate is seconds on a V100; on a busy CPU it takes longer: a
          // start-up allowance keeps the time limit's signal out of these runs.
          {"startup_s", 900}}}};
    config_ = tmp_.file("jobctld.json");
    std::ofstream(config_) << config.dump();
  }
  void TearDown() override {
    if (local_) local_->stop(SIGTERM, 10s);
  }

  std::unique_ptr<Daemon> start_daemon(const std::string& listen = "127.0.0.1:0") {
    auto d = std::make_unique<Daemon>(tmp_.file("data"), listen, 3, std::vector<std::string>{"--config", config_});
    EXPECT_FALSE(d->url().empty());
    return d;
  }

  // An idle local worker with a (fake) H100: a dearer option placement weighs against the partition.
  void start_local_worker(client::ApiClient& api, const std::string& url) {
    const std::string fixtures = std::string(std::getenv("JOBCTL_SOURCE_DIR") ? std::getenv("JOBCTL_SOURCE_DIR") : ".") +
                                 "/tests/fixtures/nvidia-smi/h100-sxm";
    local_.emplace(worker_argv(url, "local-h100", tmp_.file("local"), {"--fake-gpus", fixtures}));
    ASSERT_TRUE(local_->ok());
    ASSERT_TRUE(jobctl::testing::poll_until([&] {
      auto w = api.list_workers();
      return w && w->value("workers", json::array()).size() == 1;
    })) << "the local worker did not register\n" << local_->output();
  }

  // Submits `spec` and waits until jobctld has submitted its Slurm job (or the job ended): the job.
  json submit_until_sbatch(client::ApiClient& api, const json& spec) {
    auto submitted = api.submit_job(spec.dump());
    EXPECT_TRUE(submitted) << (submitted ? "" : submitted.error().message);
    if (!submitted) return json::object();
    return wait_job(api, (*submitted)["id"].get<int64_t>(),
                    [](const json& j) { return !submitted_slurm_jobs(j).empty() || is_terminal(j); }, 60s);
  }

  std::string slurm_output(int64_t slurm_id) {
    return read_bytes(tmp_.file("slurm-" + std::to_string(slurm_id) + ".out"));
  }

  // Waits until the job has a running Slurm job of jobctld's and has trained `step` steps.
  json wait_running_in_slurm(client::ApiClient& api, int64_t id, int64_t step) {
    json job = wait_job(api, id, [&](const json& j) { return progress_step(j) >= step || is_terminal(j); }, 180s);
    EXPECT_GE(progress_step(job), step) << job.dump(2) << "\n" << cluster_->logs();
    EXPECT_FALSE(is_terminal(job)) << "the job ended before it could be interrupted; make it longer";
    return job;
  }

  // A jobctld killed mid-run and started again on the same port and data: the job (named `name`)
  // ran `step` steps in its Slurm job when jobctld was SIGKILLed; `while_down`, given that Slurm
  // job's id, ran before the restart.
  struct Restarted {
    std::unique_ptr<Daemon> daemon;
    int64_t id = 0;
    std::vector<int64_t> slurm_jobs;  // those jobctld had submitted before it was killed (one)
  };
  Restarted kill_and_restart_mid_run(const std::string& name, int64_t step,
                                     const std::function<void(int64_t slurm_id)>& while_down) {
    Restarted r;
    r.daemon = start_daemon();
    const int port = r.daemon->port();
    client::ApiClient api(r.daemon->url());
    auto submitted = api.submit_job(recovery_spec(name));
    EXPECT_TRUE(submitted);
    if (!submitted) return r;
    r.id = (*submitted)["id"];
    json job = wait_running_in_slurm(api, r.id, step);
    r.slurm_jobs = submitted_slurm_jobs(job);
    EXPECT_EQ(r.slurm_jobs.size(), 1u) << job.dump(2);
    if (HasFailure()) return r;
    r.daemon->process().stop(SIGKILL, 10s);
    r.daemon.reset();
    while_down(r.slurm_jobs[0]);
    if (HasFailure()) return r;
    r.daemon = start_daemon("127.0.0.1:" + std::to_string(port));
    EXPECT_EQ(r.daemon->port(), port);
    return r;
  }

  // Interrupts the job's Slurm job mid-run with `interrupt`, then checks that jobctld records the
  // event, submits a fresh Slurm job, and that it resumes from the checkpoint bit for bit.
  void interrupt_and_resume(const std::function<void(int64_t)>& interrupt, const std::string& expected_event) {
    auto d = start_daemon();
    client::ApiClient api(d->url());
    auto submitted = api.submit_job(recovery_spec("launch-" + expected_event));
    ASSERT_TRUE(submitted);
    const int64_t id = (*submitted)["id"];
    json job = wait_running_in_slurm(api, id, 130);
    ASSERT_FALSE(::testing::Test::HasFailure());
    const auto first = submitted_slurm_jobs(job);
    ASSERT_EQ(first.size(), 1u) << job.dump(2);

    interrupt(first[0]);
    job = wait_job(api, id, [&](const json& j) { return is_terminal(j) || submitted_slurm_jobs(j).size() >= 2; }, 120s);
    const auto both = submitted_slurm_jobs(job);
    ASSERT_EQ(both.size(), 2u) << job.dump(2) << "\n" << slurm_output(first[0]) << cluster_->logs();
    EXPECT_NE(both[1], both[0]);
    EXPECT_TRUE(has_event(job, expected_event)) << job.dump(2);
    std::smatch m;
    const std::string out_first = slurm_output(first[0]);
    ASSERT_TRUE(std::regex_search(out_first, m, std::regex("uploaded (signal|interrupt) checkpoint at step ([0-9]+)")))
        << out_first;
    const int64_t signal_step = std::stoll(m[2]);

    job = wait_job(api, id, is_terminal, 240s);
    ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n" << slurm_output(both[1]);
    EXPECT_EQ(job["recoveries"], 1);
    EXPECT_EQ(job["placement"]["chosen"]["option"], "slurm") << job["placement"].dump(2);
    EXPECT_NE(slurm_output(both[1]).find("resuming from the checkpoint at step " + std::to_string(signal_step)),
              std::string::npos)
        << slurm_output(both[1]);
    EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), *reference_crc_);
    EXPECT_EQ(submitted_slurm_jobs(job).size(), 2u) << "one fresh sbatch, not more";
    // The interrupted Slurm job ended and never ran a worker again.
    auto again = slurm_job(first[0]);
    ASSERT_TRUE(again);
    EXPECT_TRUE(again->ended()) << again->state;
    EXPECT_EQ(slurm_output(first[0]).find("jobctl-worker: registered", out_first.size()), std::string::npos);
    // jobctld watched the second one end too.
    job = wait_job(api, id, [](const json& j) { return has_event(j, "slurm_completed"); }, 30s);
    EXPECT_TRUE(has_event(job, "slurm_completed")) << job.dump(2);
  }

  jobctl::testing::TempDir tmp_;
  std::string config_;
  std::string tag_;
  std::optional<jobctl::testing::Process> local_;
};


TEST_F(SlurmLaunchTest, TheCheapestPartitionGetsOneSlurmJobFromJobctldAndSlurmAgrees) {
  auto d = start_daemon();
  client::ApiClient api(d->url());
  start_local_worker(api, d->url());
  ASSERT_FALSE(HasFailure());
  auto submitted = api.submit_job(recovery_spec("launch-run"));
  ASSERT_TRUE(submitted);
  const int64_t id = (*submitted)["id"];
  json job = wait_job(api, id, is_terminal, 240s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n" << cluster_->logs();
  EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), *reference_crc_);
  EXPECT_EQ(job["recoveries"], 0);

  // Placed there because it was the cheapest option that could run it.
  const json& placement = job["placement"];
  ASSERT_EQ(placement["chosen"]["option"], "slurm") << placement.dump(2);
  EXPECT_EQ(placement["chosen"]["partition"], "gpu");
  const double chosen_cost = placement["chosen"]["estimated_cost_usd"].get<double>();
  int alternatives = 0;
  for (const auto& c : placement["candidates"]) {
    if (c.contains("rejection") || c.value("chosen", false)) continue;
    ++alternatives;
    EXPECT_LE(chosen_cost, c["estimated_cost_usd"].get<double>()) << c.dump(2);
  }
  EXPECT_GE(alternatives, 1) << "the idle local H100 was an option too: " << placement.dump(2);

  // One sbatch, by jobctld; Slurm ran the worker for that job and nothing else.
  const auto slurm_ids = submitted_slurm_jobs(job);
  ASSERT_EQ(slurm_ids.size(), 1u) << job.dump(2);
  const int64_t slurm_id = slurm_ids[0];
  const std::string out = slurm_output(slurm_id);
  EXPECT_NE(out.find("jobctl-worker: registered"), std::string::npos) << out;
  EXPECT_TRUE(kept_final_checkpoint(tmp_.file("work"), id) == read_bytes(reference_dir_->file("out/final.ckpt")));

  // jobctld saw the Slurm job end, and Slurm's own records agree: squeue (within MinJobAge) and
  // the jobcomp record, under the name and comment jobctld gave it.
  job = wait_job(api, id, [](const json& j) { return has_event(j, "slurm_completed"); }, 30s);
  EXPECT_TRUE(has_event(job, "slurm_completed")) << job.dump(2);
  auto ended = slurm_job(slurm_id);
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->state, "COMPLETED");
  EXPECT_EQ(ended->exit_code, 0);
  EXPECT_EQ(ended->name, "jobctl-job-" + std::to_string(id));
  EXPECT_EQ(ended->comment, "jobctl:" + tag_);
  EXPECT_EQ(ended->partition, "gpu");
  EXPECT_EQ(ended->gpus, 1);
  const std::string records = cluster_->job_records();
  const std::regex record("JobId=" + std::to_string(slurm_id) + " .*Name=jobctl-job-" + std::to_string(id) +
                          " JobState=COMPLETED");
  EXPECT_TRUE(std::regex_search(records, record)) << records;
  // The local worker was never offered it.
  EXPECT_EQ(local_->output().find("jobctl-worker: job "), std::string::npos) << local_->output();
}

// A gang on the partition: one Slurm job of one task per node, each task's worker a node of it.
// The test cluster's one node stands in for two machines (tasks_per_node 2).
TEST_F(SlurmLaunchTest, AGangIsOneSlurmJobWithAWorkerPerTaskThroughSrun) {
  if (!torch_distributed_available())
    JOBCTL_SKIP_UNLESS_CI("Debian's python3-torch with gloo is not installed (scripts/setup.sh)");
  // Paced (--step-ms) so that the second run can be cancelled mid-way.
  const std::vector<std::string> args = {"--steps", "100", "--train-samples", "512", "--test-samples", "200",
                                         "--hidden", "32", "--batch-size", "64", "--log-every", "5",
                                         "--checkpoint-every", "20", "--step-ms", "40"};
  const std::string expected = ddp_reference_hash(args);
  ASSERT_FALSE(expected.empty());
  json config = json::parse(read_bytes(config_));
  config["slurm"]["partitions"][0]["tasks_per_node"] = 2;
  std::ofstream(config_, std::ios::trunc) << config.dump();

  auto d = start_daemon();
  client::ApiClient api(d->url());
  const json spec = {{"name", "slurm-gang"},
                     {"command", ddp_command(args)},
                     {"resources", {{"gpu", "V100"}, {"gpus", 1}, {"nodes", 2}}}};
  auto submitted = api.submit_job(spec.dump());
  ASSERT_TRUE(submitted) << submitted.error().message;
  const int64_t id = (*submitted)["id"];
  json job = wait_job(api, id, is_terminal, 240s);
  const auto slurm_ids = submitted_slurm_jobs(job);
  ASSERT_EQ(job.value("state", ""), "succeeded")
      << job.dump(2) << "\n" << (slurm_ids.empty() ? "" : slurm_output(slurm_ids[0])) << cluster_->logs();
  EXPECT_EQ(job["result"].value("weights_sha256", ""), expected) << job["result"].dump();
  EXPECT_EQ(job["result"].value("world_size", 0), 2);
  EXPECT_EQ(job["placement"]["chosen"]["option"], "slurm") << job["placement"].dump(2);

  // One sbatch of two tasks on one node.
  ASSERT_EQ(slurm_ids.size(), 1u) << job.dump(2);
  for (const auto& e : job["events"])
    if (e.value("type", "") == "slurm_submitted") {
      EXPECT_EQ(e["detail"].value("tasks", 0), 2) << e.dump();
      EXPECT_EQ(e["detail"].value("nodes", 0), 1) << e.dump();
    }
  // Its two tasks' workers, told apart by their task, were the gang's two nodes.
  std::set<int64_t> nodes;
  for (const auto& e : job["events"])
    if (e.value("type", "") == "leased")
      for (const auto& n : e["detail"].value("nodes", json::array())) nodes.insert(n.value("worker_id", int64_t{0}));
  ASSERT_EQ(nodes.size(), 2u) << job["events"].dump(1);
  auto listed = api.list_workers();
  ASSERT_TRUE(listed);
  std::set<std::string> instances;
  for (const auto& w : listed->value("workers", json::array()))
    if (nodes.count(w.value("id", int64_t{0})))
      instances.insert(w["capabilities"]["instance"].value("id", ""));
  const std::string sid = std::to_string(slurm_ids[0]);
  EXPECT_EQ(instances, (std::set<std::string>{sid + ".0", sid + ".1"}));

  // Slurm agrees: the batch job of two tasks completed.
  job = wait_job(api, id, [](const json& j) { return has_event(j, "slurm_completed"); }, 60s);
  EXPECT_TRUE(has_event(job, "slurm_completed")) << job.dump(2);
  auto ended = slurm_job(slurm_ids[0]);
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->state, "COMPLETED");
  EXPECT_EQ(ended->name, "jobctl-job-" + std::to_string(id));

  // `scancel` of a gang's batch job mid-run: every task's worker is signalled, the gang stops with
  // rank 0's checkpoint, jobctld records the cancel and submits a fresh batch job of two tasks,
  // which resumes from that checkpoint to the same weights.
  submitted = api.submit_job(spec.dump());
  ASSERT_TRUE(submitted) << submitted.error().message;
  const int64_t cancelled = (*submitted)["id"];
  job = wait_running_in_slurm(api, cancelled, 30);
  ASSERT_FALSE(HasFailure());
  const auto first = submitted_slurm_jobs(job);
  ASSERT_EQ(first.size(), 1u) << job.dump(2);
  ASSERT_TRUE(slurm_->cancel(first[0]));
  job = wait_job(api, cancelled, is_terminal, 240s);
  const auto both = submitted_slurm_jobs(job);
  ASSERT_EQ(job.value("state", ""), "succeeded")
      << job.dump(2) << "\n" << slurm_output(first[0]) << (both.size() > 1 ? slurm_output(both[1]) : "")
      << cluster_->logs();
  EXPECT_EQ(job["result"].value("weights_sha256", ""), expected) << job["result"].dump();
  EXPECT_GT(job["result"].value("resumed_from", int64_t{0}), 0) << "resumed from the checkpoint, not from scratch";
  ASSERT_EQ(both.size(), 2u) << job.dump(2);
  EXPECT_TRUE(has_event(job, "slurm_cancelled")) << job.dump(2);
  EXPECT_LE(job.value("recoveries", 0), 1);
  std::cout << "slurm gang e2e: scancel of Slurm job " << first[0] << " at step >= 30; resumed from step "
            << job["result"].value("resumed_from", int64_t{0}) << " in Slurm job " << both[1] << ", recoveries "
            << job.value("recoveries", 0) << "; final weights " << job["result"].value("weights_sha256", "")
            << " (2 processes outside jobctl: " << expected << ")\n";
}

// A job that asks for the partition's GPU model is accepted although no registered worker has it
// (the partition's node counts at submit), and cancelling it in jobctl cancels its Slurm job.
TEST_F(SlurmLaunchTest, CancellingTheJobCancelsItsSlurmJob) {
  auto d = start_daemon();
  client::ApiClient api(d->url());
  start_local_worker(api, d->url());
  ASSERT_FALSE(HasFailure());
  json spec = json::parse(recovery_spec("launch-cancel"));
  spec["resources"] = {{"gpu", "V100"}, {"gpus", 1}};
  json job = submit_until_sbatch(api, spec);
  const int64_t id = job.value("id", int64_t{0});
  const auto slurm_ids = submitted_slurm_jobs(job);
  ASSERT_EQ(slurm_ids.size(), 1u) << job.dump(2);
  ASSERT_TRUE(api.cancel_job(id));
  job = wait_job(api, id, [](const json& j) { return has_event(j, "slurm_cancelled"); }, 60s);
  EXPECT_TRUE(has_event(job, "slurm_cancelled")) << job.dump(2);
  EXPECT_EQ(job.value("state", ""), "cancelled");
  auto ended = slurm_job(slurm_ids[0]);
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->state, "CANCELLED");
  EXPECT_EQ(submitted_slurm_jobs(job).size(), 1u);
}

// resources.gpus "auto": a workload one 16 GB V100 cannot hold (18.6 GiB) and two can (10.4 GiB
// each, ZeRO-3) is placed on the partition at 2 GPUs, and its Slurm job asks for 2 (--gpus).
TEST_F(SlurmLaunchTest, AnAutoJobAsksSlurmForTheGpuCountChosenToFit) {
  auto d = start_daemon();
  client::ApiClient api(d->url());
  start_local_worker(api, d->url());
  ASSERT_FALSE(HasFailure());
  const json spec = {{"name", "launch-auto"},
                     {"command", {"/bin/sh", "-c", "exit 0"}},
                     {"resources", {{"gpu", "V100"}, {"gpus", "auto"}}},
                     {"estimate",
                      {{"model",
                        {{"parameters", 1000000000}, {"layers", 24}, {"hidden", 2048}, {"heads", 16},
                         {"vocab", 32000}, {"seq_len", 512}, {"tokens", 1000000}, {"precision", "fp16"},
                         {"optimizer", "adamw"}, {"zero_stage", 3}}}}}};
  json job = submit_until_sbatch(api, spec);
  const int64_t id = job.value("id", int64_t{0});
  const auto slurm_ids = submitted_slurm_jobs(job);
  ASSERT_EQ(slurm_ids.size(), 1u) << job.dump(2);
  EXPECT_EQ(job["placement"]["chosen"]["option"], "slurm") << job["placement"].dump(2);
  EXPECT_EQ(job["placement"]["chosen"]["job_gpus"], 2) << job["placement"]["chosen"].dump(2);
  EXPECT_EQ(job["resources"]["gpus"], 2) << job.dump(2);
  ASSERT_TRUE(api.cancel_job(id));
  job = wait_job(api, id, [](const json& j) { return has_event(j, "slurm_cancelled"); }, 60s);
  EXPECT_TRUE(has_event(job, "slurm_cancelled")) << job.dump(2);
  auto ended = slurm_job(slurm_ids[0]);
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->gpus, 2);
}

TEST_F(SlurmLaunchTest, ScancelMidRunCheckpointsAndAFreshSlurmJobResumesBitExact) {
  interrupt_and_resume([&](int64_t slurm_id) { ASSERT_TRUE(slurm_->cancel(slurm_id)); }, "slurm_cancelled");
}

TEST_F(SlurmLaunchTest, ScontrolRequeueMidRunCheckpointsAndAFreshSlurmJobResumesBitExact) {
  interrupt_and_resume([&](int64_t slurm_id) { ASSERT_TRUE(slurm_->requeue(slurm_id)); }, "slurm_requeued");
}

TEST_F(SlurmLaunchTest, AJobctldRestartMidRunAdoptsTheRunningSlurmJob) {
  auto r = kill_and_restart_mid_run("launch-restart", 130, [](int64_t) {});
  ASSERT_FALSE(HasFailure());
  const int64_t id = r.id;
  const auto& before = r.slurm_jobs;
  client::ApiClient again(r.daemon->url());
  json job = wait_job(again, id, is_terminal, 240s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n" << slurm_output(before[0]);
  EXPECT_EQ(job["recoveries"], 0);
  EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), *reference_crc_);
  EXPECT_EQ(submitted_slurm_jobs(job), before) << "the restarted jobctld submitted again: " << job.dump(2);
  job = wait_job(again, id, [](const json& j) { return has_event(j, "slurm_completed"); }, 30s);
  EXPECT_TRUE(has_event(job, "slurm_completed")) << job.dump(2);
  auto done = slurm_job(before[0]);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, "COMPLETED");
  // Every Slurm job of jobctld's is this one: nothing else was submitted under its comment.
  auto all = slurm_->jobs();
  ASSERT_TRUE(all);
  int ours = 0;
  for (const auto& j : *all) ours += j.comment == "jobctl:" + tag_ && j.name == "jobctl-job-" + std::to_string(id);
  EXPECT_EQ(ours, 1);
}

// jobctld dies after sbatch and before it records the Slurm job (its row is gone): restarted, it
// finds the Slurm job by its comment, adopts it (its jobctl job from its name) and submits nothing
// more; the job finishes there and jobctld sees the Slurm job end.
TEST_F(SlurmLaunchTest, AJobctldThatLostItsRecordAdoptsTheSlurmJobByItsComment) {
  auto r = kill_and_restart_mid_run("launch-adopt", 130, [this](int64_t) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((tmp_.file("data") + "/jobctl.db").c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    const int rc = sqlite3_exec(db, "DELETE FROM slurm_jobs", nullptr, nullptr, &error);
    const std::string message = error ? error : "";
    sqlite3_free(error);
    EXPECT_EQ(sqlite3_changes(db), 1);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << message;
  });
  ASSERT_FALSE(HasFailure());
  const int64_t id = r.id;
  const auto& before = r.slurm_jobs;
  client::ApiClient again(r.daemon->url());
  json job = wait_job(again, id, is_terminal, 240s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n" << slurm_output(before[0]);
  EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), *reference_crc_);
  EXPECT_EQ(submitted_slurm_jobs(job), before) << "the restarted jobctld submitted again: " << job.dump(2);
  // Only an adopted Slurm job is watched to its end.
  job = wait_job(again, id, [](const json& j) { return has_event(j, "slurm_completed"); }, 30s);
  EXPECT_TRUE(has_event(job, "slurm_completed")) << job.dump(2);
}

// The Slurm job is cancelled while jobctld is down: its worker cannot hand the job back (nobody
// answers) and Slurm ends it. Restarted, jobctld finds it CANCELLED, releases the lease the dead
// worker held (the job is requeued at once with its newest checkpoint), and placement's choice
// of the partition gets a fresh Slurm job that resumes bit-exact.
TEST_F(SlurmLaunchTest, ASlurmJobThatEndedWhileJobctldWasDownRequeuesTheJob) {
  // Past the checkpoint at step 200.
  auto r = kill_and_restart_mid_run("launch-down", 230, [this](int64_t slurm_id) {
    ASSERT_TRUE(slurm_->cancel(slurm_id));
    const bool ended = jobctl::testing::poll_until([&] {
      auto j = slurm_job(slurm_id);
      return j && j->ended();
    }, 60s, 200ms);
    ASSERT_TRUE(ended) << cluster_->logs();
  });
  ASSERT_FALSE(HasFailure());
  const int64_t id = r.id;
  const auto& first = r.slurm_jobs;
  client::ApiClient again(r.daemon->url());
  json job = wait_job(again, id, is_terminal, 240s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n" << slurm_output(first[0]);
  EXPECT_EQ(job["recoveries"], 1);
  EXPECT_TRUE(has_event(job, "slurm_cancelled")) << job.dump(2);
  const auto both = submitted_slurm_jobs(job);
  ASSERT_EQ(both.size(), 2u) << job.dump(2);
  EXPECT_EQ(both[0], first[0]);
  EXPECT_NE(slurm_output(both[1]).find("resuming from the checkpoint at step"), std::string::npos)
      << slurm_output(both[1]);
  EXPECT_EQ(job["result"].value("final_checkpoint_crc32c", ""), *reference_crc_);
}

}  // namespace
}  // namespace jobctl::e2e
