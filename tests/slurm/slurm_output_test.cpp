// The Slurm backend's pure parts on output captured from Debian 12's slurm-wlm 22.05.8
// (tests/slurm/data/, captured from scripts/slurm-cluster.sh's cluster: a running job, one
// requeued by `scontrol requeue`, one preempted by a job of the higher-tier partition, one that
// reached its time limit), plus the batch job's sbatch arguments and the queue-wait estimate.
#include <gtest/gtest.h>

#include <string>

#include "slurm/batch_job.h"
#include "slurm/job_outcome.h"
#include "slurm/partition.h"
#include "slurm/queue_wait.h"
#include "slurm/slurm_json.h"
#include "tests/slurm/captured_output.h"

namespace jobctl::slurm {
namespace {

std::string data(const std::string& name) { return ::jobctl::testing::captured_slurm_output(name); }

std::vector<SlurmJob> squeue(const std::string& name) {
  auto jobs = parse_squeue_json(data(name));
  EXPECT_TRUE(jobs) << jobs.error().message;
  return jobs ? *jobs : std::vector<SlurmJob>{};
}

const SlurmJob& job(const std::vector<SlurmJob>& jobs, int64_t id) {
  for (const auto& j : jobs)
    if (j.id == id) return j;
  ADD_FAILURE() << "no job " << id;
  static SlurmJob none;
  return none;
}

TEST(SqueueJson, RunningJobWithGresAndLimits) {
  const auto jobs = squeue("squeue-running.json");
  ASSERT_EQ(jobs.size(), 1u);
  const SlurmJob& j = jobs[0];
  EXPECT_EQ(j.id, 1);
  EXPECT_EQ(j.name, "jobctl-job-1");
  EXPECT_EQ(j.comment, "jobctl:tag1");
  EXPECT_EQ(j.partition, "gpu");
  EXPECT_EQ(j.state, "RUNNING");
  EXPECT_TRUE(j.running());
  EXPECT_FALSE(j.pending());
  EXPECT_EQ(j.nodes, "node1");
  EXPECT_EQ(j.gpus, 1);
  EXPECT_EQ(j.gpu_type, "fake");
  ASSERT_TRUE(j.time_limit_s);
  EXPECT_EQ(*j.time_limit_s, 120);  // --time=2 (minutes)
  EXPECT_EQ(j.start_s, 1795466417);
  EXPECT_EQ(j.end_s, j.start_s + 120);  // Slurm's expected end: start + limit
  EXPECT_EQ(j.restart_count, 0);
  EXPECT_EQ(outcome_of(j).phase, Phase::running);
}

// jobctld's own Slurm jobs: its comment and its user. squeue lists every user's jobs, and any
// user can put the comment on theirs.
TEST(SqueueJson, OnlyJobsOfJobctldsOwnUserWithItsCommentAreItsOwn) {
  const auto jobs = squeue("squeue-running.json");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].user_id, 0);  // captured as root
  EXPECT_TRUE(submitted_by(jobs[0], "jobctl:tag1", 0));
  EXPECT_FALSE(submitted_by(jobs[0], "jobctl:tag2", 0));
  EXPECT_FALSE(submitted_by(jobs[0], "jobctl:tag1", 1000));
  // Another user's job with the same comment (the same output, submitted by uid 1000).
  std::string text = data("squeue-running.json");
  const size_t at = text.find("\"user_id\": 0");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string("\"user_id\": 0").size(), "\"user_id\": 1000");
  auto other = parse_squeue_json(text);
  ASSERT_TRUE(other) << other.error().message;
  ASSERT_EQ(other->size(), 1u);
  EXPECT_EQ((*other)[0].comment, "jobctl:tag1");
  EXPECT_FALSE(submitted_by((*other)[0], "jobctl:tag1", 0));
  EXPECT_TRUE(submitted_by((*other)[0], "jobctl:tag1", 1000));
  // Output that names no user is nobody's.
  auto unnamed = parse_squeue_json(R"({"jobs": [{"job_id": 5, "job_state": "RUNNING", "comment": "jobctl:tag1"}]})");
  ASSERT_TRUE(unnamed);
  EXPECT_FALSE(submitted_by((*unnamed)[0], "jobctl:tag1", 0));
}

TEST(SqueueJson, RequeuedJobIsOverForJobctl) {
  const auto jobs = squeue("squeue-requeued.json");
  ASSERT_EQ(jobs.size(), 1u);
  const SlurmJob& j = jobs[0];
  EXPECT_EQ(j.state, "COMPLETING");  // its processes end; then PENDING (BeginTime)
  EXPECT_EQ(j.restart_count, 1);
  EXPECT_EQ(j.preempt_s, 0);
  const Outcome o = outcome_of(j);
  EXPECT_EQ(o.phase, Phase::ended);
  EXPECT_EQ(o.event, "slurm_requeued");
  EXPECT_TRUE(o.requeued);
  // The same job seen by a daemon that launched it after an earlier requeue: still running.
  EXPECT_EQ(outcome_of(j, 1).phase, Phase::running);
}

TEST(SqueueJson, PreemptedJobAndTheJobsAroundIt) {
  const auto jobs = squeue("squeue-preempted.json");
  ASSERT_EQ(jobs.size(), 5u);
  const SlurmJob& preempted = job(jobs, 4);
  EXPECT_EQ(preempted.restart_count, 1);
  EXPECT_GT(preempted.preempt_s, 0);
  EXPECT_EQ(preempted.gpus, 2);
  Outcome o = outcome_of(preempted);
  EXPECT_EQ(o.event, "slurm_preempted");
  EXPECT_TRUE(o.requeued);
  // Job 1 was requeued, then cancelled while pending: the run jobctl launched ended by requeue,
  // and nothing is left to cancel.
  o = outcome_of(job(jobs, 1));
  EXPECT_EQ(o.event, "slurm_requeued");
  EXPECT_FALSE(o.requeued);
  o = outcome_of(job(jobs, 2));  // scancel while running
  EXPECT_EQ(o.phase, Phase::ended);
  EXPECT_EQ(o.event, "slurm_cancelled");
  const SlurmJob& waiting = job(jobs, 5);  // the preempting job, not started yet
  EXPECT_TRUE(waiting.pending());
  EXPECT_EQ(waiting.partition, "urgent");
  EXPECT_EQ(outcome_of(waiting).phase, Phase::queued);
  const SlurmJob& cpu_only = job(jobs, 3);
  EXPECT_EQ(cpu_only.gpus, 0);
  EXPECT_EQ(cpu_only.gpu_type, "");
}

TEST(SqueueJson, TimeLimitCompletedAndRestarted) {
  const auto jobs = squeue("squeue-timeout.json");
  ASSERT_EQ(jobs.size(), 5u);
  const SlurmJob& timed_out = job(jobs, 3);
  EXPECT_EQ(timed_out.state, "TIMEOUT");
  EXPECT_EQ(timed_out.reason, "TimeLimit");
  EXPECT_EQ(timed_out.exit_code, 128 + 9);  // raw wait status 9: SIGKILL
  Outcome o = outcome_of(timed_out);
  EXPECT_EQ(o.phase, Phase::ended);
  EXPECT_EQ(o.event, "slurm_time_limit");
  o = outcome_of(job(jobs, 5));
  EXPECT_EQ(o.event, "slurm_completed");
  EXPECT_EQ(job(jobs, 5).exit_code, 0);
  // Job 4 ran again after its preemption (BeginTime passed): Slurm's preempt_time is cleared,
  // the restart count stays.
  const SlurmJob& again = job(jobs, 4);
  EXPECT_EQ(again.state, "RUNNING");
  EXPECT_EQ(again.preempt_s, 0);
  o = outcome_of(again);
  EXPECT_EQ(o.event, "slurm_requeued");
  EXPECT_TRUE(o.requeued);
}

TEST(SqueueJson, NewerReleasesNumberAndStateForms) {
  // Slurm 23.11+ (openapi v0.0.40): numbers as {set, infinite, number}, the state as a list,
  // exit_code as an object.
  const std::string text = R"({"jobs": [{"job_id": {"set": true, "infinite": false, "number": 7},
      "job_state": ["PENDING", "REQUEUED"], "name": "jobctl-job-9", "partition": "a100",
      "restart_cnt": {"set": true, "infinite": false, "number": 2},
      "time_limit": {"set": false, "infinite": true, "number": 0},
      "tres_per_node": "gres/gpu:a100=2", "node_count": {"set": true, "infinite": false, "number": 1},
      "exit_code": {"status": ["SIGNALED"], "return_code": {"set": true, "infinite": false, "number": 0},
                    "signal": {"id": {"set": true, "infinite": false, "number": 15}, "name": "TERM"}}}],
      "errors": [], "warnings": []})";
  auto jobs = parse_squeue_json(text);
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 1u);
  const SlurmJob& j = (*jobs)[0];
  EXPECT_EQ(j.id, 7);
  EXPECT_EQ(j.state, "PENDING");
  ASSERT_EQ(j.state_flags.size(), 1u);
  EXPECT_EQ(j.state_flags[0], "REQUEUED");
  EXPECT_TRUE(j.pending());
  EXPECT_EQ(j.restart_count, 2);
  EXPECT_FALSE(j.time_limit_s);  // infinite
  EXPECT_EQ(j.gpus, 2);
  EXPECT_EQ(j.gpu_type, "a100");
  EXPECT_EQ(j.exit_code, 128 + 15);
}

TEST(SqueueJson, BadOutputIsAnErrorNamingTheField) {
  auto r = parse_squeue_json("squeue: error: Unable to contact slurm controller");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::malformed_json);
  r = parse_squeue_json(R"({"jobs": [{"job_state": "RUNNING"}]})");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "squeue.jobs[0].job_id");
  r = parse_squeue_json(R"({"jobs": [{"job_id": 3}]})");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "squeue.jobs[0].job_state");
  r = parse_squeue_json(R"({"meta": {}})");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "squeue.jobs");
  r = parse_squeue_json(R"({"errors": [{"error": "Invalid user"}], "jobs": []})");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_NE(r.error().message.find("Invalid user"), std::string::npos);
}

TEST(SqueueJson, UnreachableControllerIsUnavailable) {
  // squeue --json exits 0 when it cannot reach slurmctld: the error is inside the document.
  auto r = parse_squeue_json(data("squeue-no-controller.json"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::unavailable);
  EXPECT_NE(r.error().message.find("Unspecified error"), std::string::npos) << r.error().message;
}

TEST(SinfoJson, NodeGresAndPartitions) {
  auto nodes = parse_sinfo_json(data("sinfo-mixed.json"));
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_EQ(nodes->size(), 1u);
  const SlurmNode& n = (*nodes)[0];
  EXPECT_EQ(n.name, "node1");
  EXPECT_EQ(n.state, "mixed");
  EXPECT_TRUE(n.usable());
  EXPECT_EQ(n.gpus, 2);
  EXPECT_EQ(n.gpu_type, "fake");
  EXPECT_EQ(n.cpus, 2);
  ASSERT_EQ(n.partitions.size(), 2u);
  const auto parts = partitions_from_nodes(*nodes);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].name, "gpu");
  EXPECT_EQ(parts[0].gpus, 2);
  EXPECT_EQ(parts[0].gpus_per_node, 2);
  EXPECT_EQ(parts[0].gpu_type, "fake");
  EXPECT_EQ(parts[1].name, "urgent");
}

TEST(SinfoJson, DownNodesDoNotCount) {
  std::vector<SlurmNode> nodes(3);
  nodes[0] = {"a1", "idle", {"a100"}, 64, 4, "a100"};
  nodes[1] = {"a2", "down+not_responding", {"a100"}, 64, 4, "a100"};
  nodes[2] = {"a3", "idle+drain", {"a100"}, 64, 4, "a100"};
  const auto parts = partitions_from_nodes(nodes);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].nodes, 3);
  EXPECT_EQ(parts[0].usable_nodes, 1);
  EXPECT_EQ(parts[0].gpus, 4);
}

TEST(Gres, Forms) {
  EXPECT_EQ(parse_gpu_gres("gpu:fake:2").count, 2);
  EXPECT_EQ(parse_gpu_gres("gpu:a100:4(S:0-1)").count, 4);
  EXPECT_EQ(parse_gpu_gres("gpu:a100:4(S:0-1)").type, "a100");
  EXPECT_EQ(parse_gpu_gres("gpu:2").count, 2);
  EXPECT_EQ(parse_gpu_gres("gpu:2").type, "");
  EXPECT_EQ(parse_gpu_gres("gpu").count, 1);
  EXPECT_EQ(parse_gpu_gres("gres:gpu:fake:1").count, 1);
  EXPECT_EQ(parse_gpu_gres("gres/gpu:A100=3").count, 3);
  EXPECT_EQ(parse_gpu_gres("gres/gpu:A100=3").type, "a100");
  EXPECT_EQ(parse_gpu_gres("gpu:a100:2,gpu:v100:2,mps:100").count, 4);
  EXPECT_EQ(parse_gpu_gres("gpu:a100:2,gpu:v100:2,mps:100").type, "a100");
  EXPECT_EQ(parse_gpu_gres("mps:100").count, 0);
  EXPECT_EQ(parse_gpu_gres("(null)").count, 0);
  EXPECT_EQ(parse_gpu_gres("").count, 0);
}

TEST(Hostlist, Expands) {
  EXPECT_EQ(expand_hostlist("node1"), (std::vector<std::string>{"node1"}));
  EXPECT_EQ(expand_hostlist("node[1-3,7]"), (std::vector<std::string>{"node1", "node2", "node3", "node7"}));
  EXPECT_EQ(expand_hostlist("gpu[08-10],cpu5"), (std::vector<std::string>{"gpu08", "gpu09", "gpu10", "cpu5"}));
  EXPECT_EQ(expand_hostlist(""), (std::vector<std::string>{}));
  EXPECT_EQ(expand_hostlist("bad[3-1]"), (std::vector<std::string>{"bad[3-1]"}));
}

TEST(Sbatch, ParsableOutput) {
  EXPECT_EQ(*parse_sbatch_parsable("1234\n"), 1234);
  EXPECT_EQ(*parse_sbatch_parsable("1234;cluster2\n"), 1234);
  EXPECT_EQ(*parse_sbatch_parsable("sbatch: warning: something\n77\n"), 77);
  EXPECT_FALSE(parse_sbatch_parsable(""));
  EXPECT_FALSE(parse_sbatch_parsable("Submitted batch job 5"));
}

BatchJob sample() {
  BatchJob j;
  j.name = "jobctl-job-12";
  j.comment = "jobctl:prod";
  j.partition = "gpu";
  j.gpus = 2;
  j.gpu_type = "a100";
  j.time_limit_s = time_limit_for(1800, 0.5, 120, 60);
  j.signal_lead_s = 120;
  j.command = "jobctl-worker --server 'http://10.0.0.5:8080'";
  return j;
}

TEST(BatchJob, SbatchArguments) {
  const BatchJob j = sample();
  ASSERT_TRUE(validate(j));
  EXPECT_EQ(j.time_limit_s, 48 * 60);  // 1800 * 1.5 + 120 + 60 = 2880 s
  const auto a = sbatch_arguments(j);
  auto has = [&](const std::string& s) { return std::find(a.begin(), a.end(), s) != a.end(); };
  EXPECT_TRUE(has("--parsable"));
  EXPECT_TRUE(has("--job-name=jobctl-job-12"));
  EXPECT_TRUE(has("--comment=jobctl:prod"));
  EXPECT_TRUE(has("--partition=gpu"));
  EXPECT_TRUE(has("--gres=gpu:a100:2"));
  EXPECT_TRUE(has("--time=48"));
  EXPECT_TRUE(has("--signal=B:TERM@120"));
  EXPECT_TRUE(has("--requeue"));
  EXPECT_TRUE(has("--nodes=1"));
  EXPECT_TRUE(has("--ntasks=1"));
  EXPECT_EQ(a.back(), "--wrap=exec jobctl-worker --server 'http://10.0.0.5:8080'");
}

TEST(BatchJob, AGangIsOneTaskPerNodeSignalledInEveryTask) {
  BatchJob j = sample();
  j.tasks = 4;
  ASSERT_TRUE(validate(j));
  auto a = sbatch_arguments(j);
  auto has = [&](const std::string& s) { return std::find(a.begin(), a.end(), s) != a.end(); };
  EXPECT_TRUE(has("--nodes=4"));
  EXPECT_TRUE(has("--ntasks=4"));
  EXPECT_TRUE(has("--ntasks-per-node=1"));
  EXPECT_TRUE(has("--gres=gpu:a100:2"));  // per node: one task's GPUs
  EXPECT_TRUE(has("--signal=TERM@120"));  // every task's worker, not the batch shell
  EXPECT_FALSE(has("--signal=B:TERM@120"));

  // A node that stands in for two machines: two tasks on each, and both tasks' GPUs.
  j.tasks = 3;
  j.tasks_per_node = 2;
  ASSERT_TRUE(validate(j));
  a = sbatch_arguments(j);
  EXPECT_TRUE(has("--nodes=2"));
  EXPECT_TRUE(has("--ntasks=3"));
  EXPECT_TRUE(has("--ntasks-per-node=2"));
  EXPECT_TRUE(has("--gres=gpu:a100:4"));
  EXPECT_EQ(nodes_for(2, 2), 1);
  EXPECT_EQ(nodes_for(5, 1), 5);
  EXPECT_EQ(nodes_for(1, 8), 1);

  j.tasks = 65;
  EXPECT_EQ(validate(j).error().field, "slurm.tasks");
  j.tasks = 2;
  j.tasks_per_node = 2;
  j.gpus = 40;
  EXPECT_EQ(validate(j).error().field, "slurm.gpus");
}

TEST(BatchJob, TimeLimits) {
  EXPECT_EQ(time_limit_for(0, 0.5, 0, 0), 60);          // at least a minute
  EXPECT_EQ(time_limit_for(60, 0, 0, 0), 60);
  EXPECT_EQ(time_limit_for(61, 0, 0, 0), 120);          // whole minutes, rounded up
  EXPECT_EQ(time_limit_for(3600, 0.25, 120, 60), 4680);  // 4500 + 180
  EXPECT_EQ(slurm_time(60), "1");
  EXPECT_EQ(slurm_time(90), "2");
  EXPECT_EQ(slurm_time(23 * 3600 + 59 * 60), "1439");
  EXPECT_EQ(slurm_time(26 * 3600), "1-02:00:00");
}

TEST(BatchJob, ValidationNamesTheField) {
  BatchJob j = sample();
  j.signal_lead_s = static_cast<int>(j.time_limit_s);
  EXPECT_EQ(validate(j).error().field, "slurm.signal_lead_s");
  j = sample();
  j.time_limit_s = 30;
  EXPECT_EQ(validate(j).error().field, "slurm.time_limit_s");
  j = sample();
  j.gpu_type = "a100; rm -rf /";
  EXPECT_EQ(validate(j).error().field, "slurm.gpu_type");
  j = sample();
  j.extra = {"constraint=ib"};
  EXPECT_EQ(validate(j).error().field, "slurm.sbatch_options");
  j = sample();
  j.partition = "";
  EXPECT_EQ(validate(j).error().field, "slurm.partition");
}

Partition four_gpus() {
  Partition p;
  p.name = "gpu";
  p.gpu_type = "a100";
  p.gpus_per_node = 2;
  p.nodes = p.usable_nodes = 2;
  p.gpus = 4;
  p.node_names = {"n1", "n2"};
  return p;
}

SlurmJob running(int64_t id, int gpus, int64_t end_s, const std::string& partition = "gpu",
                 const std::string& nodes = "n1") {
  SlurmJob j;
  j.id = id;
  j.state = "RUNNING";
  j.partition = partition;
  j.nodes = nodes;
  j.gpus = gpus;
  j.end_s = end_s;
  j.time_limit_s = 3600;
  return j;
}

SlurmJob pending(int64_t id, int gpus, int64_t limit_s, int64_t priority) {
  SlurmJob j;
  j.id = id;
  j.state = "PENDING";
  j.partition = "gpu";
  j.gpus = gpus;
  j.time_limit_s = limit_s;
  j.priority = priority;
  j.submit_s = id;
  return j;
}

TEST(QueueWait, EmptyPartitionStartsAtOnce) {
  const QueueWait w = estimate_queue_wait(four_gpus(), {}, 1, 1000, 3600);
  EXPECT_EQ(w.wait_s, 0);
  EXPECT_TRUE(w.fits);
  EXPECT_EQ(w.gpus, 4);
}

TEST(QueueWait, RunningJobsHoldTheirGpusUntilTheirLimit) {
  const int64_t now = 1000;
  std::vector<SlurmJob> jobs = {running(1, 2, now + 600), running(2, 1, now + 300, "gpu", "n2")};
  // One GPU is still free: a 1-GPU job starts now; a 2-GPU job when job 2 ends; 4 GPUs never
  // fit one node.
  EXPECT_EQ(estimate_queue_wait(four_gpus(), jobs, 1, now, 3600).wait_s, 0);
  EXPECT_EQ(estimate_queue_wait(four_gpus(), jobs, 2, now, 3600).wait_s, 300);
  EXPECT_FALSE(estimate_queue_wait(four_gpus(), jobs, 3, now, 3600).fits);
  const QueueWait w = estimate_queue_wait(four_gpus(), jobs, 1, now, 3600);
  EXPECT_EQ(w.running_jobs, 2);
  EXPECT_EQ(w.gpus_in_use, 3);
}

TEST(QueueWait, PendingJobsGoFirstInPriorityOrder) {
  const int64_t now = 1000;
  std::vector<SlurmJob> jobs = {running(1, 2, now + 600), running(2, 2, now + 300, "gpu", "n2"),
                                pending(3, 2, 1200, 10), pending(4, 1, 100, 50)};
  // All four GPUs are busy until +300 (job 2's two) and +600 (job 1's). Job 4 (priority 50)
  // takes one at +300 until +400; job 3 takes the next two, at +300 and +400, until +1600; the
  // new 1-GPU job gets the first one left: job 1's, at +600.
  const QueueWait w = estimate_queue_wait(four_gpus(), jobs, 1, now, 3600);
  EXPECT_EQ(w.pending_jobs, 2);
  EXPECT_EQ(w.wait_s, 600);
}

TEST(QueueWait, OverlappingPartitionsShareNodes) {
  const int64_t now = 1000;
  // A job of another partition runs on n1 and n2: its GPUs are this partition's too.
  std::vector<SlurmJob> jobs = {running(1, 2, now + 900, "urgent", "n[1-2]"), running(2, 2, now + 100, "urgent", "n2"),
                                running(3, 2, now + 100, "other", "x9")};
  const QueueWait w = estimate_queue_wait(four_gpus(), jobs, 2, now, 3600);
  EXPECT_EQ(w.running_jobs, 2);
  EXPECT_EQ(w.wait_s, 100);
}

}  // namespace
}  // namespace jobctl::slurm
