// Jobs across machines end to end (docs/job-spec.md, "Jobs across machines"): jobctld and three
// jobctl-worker processes on loopback run examples/pytorch/train_ddp.py (Debian's python3-torch,
// torch.distributed over gloo on the CPU) as a gang of two nodes.
//
//   - Straight: both nodes are leased together, each program is told its rank and the other's
//     address, rank 0's result is the job's, the other's lines are its log with "[rank 1]", each
//     node is billed; the final weights hash equals a 2-process run of the same program outside
//     jobctl (examples/pytorch/run_ddp_local.py).
//   - A node lost: mid-run the worker of rank 1 is SIGKILLed. Its program stops (it dies with its
//     worker), rank 0's fails, and the gang stops as one: requeued with one recovery, placed again
//     as a gang on the two workers left, every node resuming from rank 0's newest checkpoint; it
//     succeeds with the same final weights.
#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <string>

#include "tests/e2e/ddp_support.h"
#include "tests/e2e/recovery_support.h"
#include "tests/support/ci.h"
#include "tests/support/temp_dir.h"

namespace jobctl::e2e {
namespace {

// Small enough for seconds, paced (--step-ms) so that a node can be killed mid-run.
std::vector<std::string> train_args() {
  return {"--steps", "120", "--train-samples", "512", "--test-samples", "200", "--hidden", "32",
          "--batch-size", "64", "--log-every", "5", "--checkpoint-every", "20", "--step-ms", "40"};
}

json gang_spec(const std::string& name) {
  return {{"name", name}, {"command", ddp_command(train_args())}, {"resources", {{"gpu", "cpu"}, {"nodes", 2}}},
          {"checkpoint", {{"grace_s", 10}}}};
}

// Worker ids by name.
std::map<int64_t, std::string> worker_names(client::ApiClient& api) {
  std::map<int64_t, std::string> out;
  auto r = api.http().request("GET", "/v1/workers");
  if (!r || r->status != 200) return out;
  for (const auto& w : json::parse(r->body).value("workers", json::array()))
    out[w.value("id", int64_t{0})] = w.value("name", "");
  return out;
}

TEST(Gang, TwoNodesOfADataParallelProgramMatchItsRunOutsideJobctlAndSurviveLosingANode) {
  if (!torch_distributed_available())
    JOBCTL_SKIP_UNLESS_CI("Debian's python3-torch with gloo is not installed (scripts/setup.sh)");
  const std::string expected = ddp_reference_hash(train_args());
  ASSERT_FALSE(expected.empty());

  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  std::map<std::string, std::unique_ptr<Process>> workers;
  for (const std::string name : {"n1", "n2", "n3"})
    workers[name] = std::make_unique<Process>(worker_argv(d.url(), name, tmp.file("work-" + name), {"--allow-commands"}));
  auto all_output = [&] {
    std::string s;
    for (auto& [name, w] : workers) s += "\n--- worker " + name + ":\n" + (w ? w->output() : "(killed)");
    return s + "\n--- jobctld:\n" + d.process().output();
  };

  // A gang is judged at submit against the registered workers: all three first.
  ASSERT_TRUE(jobctl::testing::poll_until([&] { return worker_names(api).size() == 3; }, 60s)) << all_output();

  // Straight through.
  auto submitted = api.submit_job(gang_spec("ddp-2node").dump());
  ASSERT_TRUE(submitted) << submitted.error().message;
  const int64_t straight = (*submitted)["id"];
  json job = wait_job(api, straight, is_terminal, 120s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << all_output();
  EXPECT_EQ(job["result"].value("weights_sha256", ""), expected) << job["result"].dump();
  EXPECT_EQ(job["result"].value("world_size", 0), 2);
  EXPECT_EQ(job["resources"].value("nodes", 0), 2);
  int leased = 0;
  for (const auto& e : job["events"])
    if (e.value("type", "") == "leased") {
      ++leased;
      ASSERT_EQ(e["detail"]["nodes"].size(), 2u) << e.dump();
      EXPECT_NE(e["detail"]["nodes"][0]["worker_id"], e["detail"]["nodes"][1]["worker_id"]);
      EXPECT_EQ(e["detail"]["nodes"][1].value("address", ""), "127.0.0.1");
    }
  EXPECT_EQ(leased, 1);
  // Both nodes billed: one segment per node's worker.
  EXPECT_GE(job["segments"].size(), 2u) << job["segments"].dump();

  // A node lost mid-run.
  submitted = api.submit_job(gang_spec("ddp-2node-lost").dump());
  ASSERT_TRUE(submitted) << submitted.error().message;
  const int64_t lost = (*submitted)["id"];
  job = wait_job(api, lost, [](const json& j) { return progress_step(j) >= 40 || is_terminal(j); }, 120s);
  ASSERT_GE(progress_step(job), 40) << job.dump(2) << all_output();
  ASSERT_EQ(job["nodes"].size(), 2u) << job.dump(2);
  const int64_t rank1_worker = job["nodes"][1].value("worker_id", int64_t{0});
  const std::string victim = worker_names(api)[rank1_worker];
  ASSERT_TRUE(workers.count(victim)) << "worker " << rank1_worker << " named '" << victim << "'";
  ::kill(workers[victim]->pid(), SIGKILL);
  workers[victim]->stop(SIGKILL, 10s);
  const std::string victim_output = workers[victim]->output();
  workers[victim].reset();

  job = wait_job(api, lost, is_terminal, 180s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << all_output() << "\n--- killed:\n" << victim_output;
  EXPECT_EQ(job["result"].value("weights_sha256", ""), expected) << job["result"].dump();
  EXPECT_EQ(job.value("recoveries", 0), 1) << "one recovery per gang restart";
  int leases = 0;
  bool stopped_as_gang = false;
  for (const auto& e : job["events"]) {
    if (e.value("type", "") == "leased") {
      ++leases;
      if (leases == 2) {
        for (const auto& n : e["detail"]["nodes"])
          EXPECT_NE(n.value("worker_id", int64_t{0}), rank1_worker) << "the lost worker is not placed again";
      }
    }
    if (e.value("type", "") == "preempted" && e["detail"].value("reason", "").find("gang node") != std::string::npos)
      stopped_as_gang = true;
  }
  EXPECT_EQ(leases, 2) << job["events"].dump(1);
  EXPECT_TRUE(stopped_as_gang) << job["events"].dump(1);
  // It resumed from a checkpoint rank 0 stored before the loss, not from scratch; the other
  // node's output (its resume) is the job's log.
  EXPECT_GT(job["result"].value("resumed_from", int64_t{0}), 0) << job["result"].dump();
  EXPECT_NE(job_log_text(api, lost).find("[rank 1] rank 1: resumed from"), std::string::npos) << job_log_text(api, lost);
}

}  // namespace
}  // namespace jobctl::e2e
