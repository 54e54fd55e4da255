// Command jobs end to end (docs/job-protocol.md): jobctld, jobctl-worker, jobctl-cloudsim and the
// users' own programs as real processes on loopback.
//
// PyTorchOnSpot: examples/pytorch/train.py (Debian's python3-torch, on the CPU) as a command job
// placed on a cloudsim spot instance; mid-run the instance is interrupted: the worker sends
// SIGTERM to the program, which checkpoints; the checkpoint is uploaded as an opaque blob, the
// job resumes on a second instance from it and succeeds with the weights' hash of an
// uninterrupted run of the same program.
//
// GangOnSpot: examples/pytorch/train_ddp.py as a 2-node command job (torch.distributed over gloo)
// on two cloudsim spot instances launched together in one zone. Mid-run a spot notice reaches the
// instance of rank 1 (not rank 0): the gang stops together after one step, rank 0 checkpointing
// that step first (at or after the last step reported before the notice: no step after the notice
// is lost), and is placed again; rank 1's instance is replaced (rank 0's, healthy, is one of the
// gang's nodes again); every node resumes from that checkpoint, and the job succeeds with the
// final weights of a 2-process run outside jobctl.
//
// FailingProgram: a program that exits 3 fails its job, the message giving the exit status and
// the tail of its log.
//
// IgnoredSigterm: a program that ignores SIGTERM is killed checkpoint.grace_s after it, and the
// job resumes from its last periodic checkpoint.
//
// WorkerWithoutAllowCommands: a worker started without --allow-commands never leases a command
// job (it takes a built-in model's job queued behind it); a worker with it then runs it.
//
// Setup: a job's setup makes a virtualenv (Debian's packages visible) once per worker, bundle and
// setup; its program runs in it; a failing setup fails the job with its output.
//
// SubmitFlags: the jobctl binary's `submit` flags for the common fields (placement, resources,
// env, setup, estimate) over a spec file reach the spec jobctld stored.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "cloud/sim_provider.h"
#include "process/run.h"
#include "tests/e2e/cloud_support.h"
#include "tests/e2e/ddp_support.h"
#include "tests/e2e/recovery_support.h"
#include "tests/support/ci.h"
#include "tests/support/temp_dir.h"

namespace jobctl::e2e {
namespace {

json checkpoints_of(client::ApiClient& api, int64_t id) {
  auto r = api.http().request("GET", "/v1/jobs/" + std::to_string(id) + "/checkpoints");
  if (!r || r->status != 200) return json::object();
  return json::parse(r->body, nullptr, false);
}

// The example's arguments after the program: 400 steps, a checkpoint every 100.
std::vector<std::string> torch_args(const std::string& script) {
  return {kDebianPython, script, "--steps", "400", "--checkpoint-every", "100", "--step-delay", "0.03"};
}

TEST(CommandJobs, PyTorchOnSpotResumesOnANewInstanceWithTheSameWeights) {
  if (!torch_available()) JOBCTL_SKIP_UNLESS_CI("Debian's python3-torch is not installed (scripts/setup.sh)");
  jobctl::testing::TempDir tmp;
  // The uninterrupted run: the same program and arguments, no worker.
  auto reference_args = torch_args(source_path("examples/pytorch/train.py"));
  reference_args.insert(reference_args.end(), {"--checkpoint-every", "0", "--step-delay", "0"});
  const auto reference_run = jobctl::testing::run_to_end(reference_args);
  const json reference = result_line(reference_run.out);
  ASSERT_TRUE(reference.contains("weights_sha256")) << reference_run.out << reference_run.err;

  CloudSim sim(tmp.file("cloudsim"), " --allow-commands");
  ASSERT_FALSE(sim.url().empty());
  Daemon d(tmp.file("data"), "127.0.0.1:0", 30, {"--config", write_config(tmp, sim.url(), "torch-e2e")});
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  cloud::SimProvider cloudsim({sim.url(), 5000});

  // Submitted as a user would: the example's folder packed into a bundle, the command after --.
  const json spec = {{"name", "torch-fmnist"},
                     {"estimate", {{"hours", 0.5}, {"gpu", "V100"}}},
                     {"resources", {{"gpu", "V100"}, {"gpus", 1}}},
                     {"placement", {{"mode", "cloud"}}}};
  const std::string spec_path = tmp.file("torch.json");
  std::ofstream(spec_path) << spec.dump();
  std::vector<std::string> cli = {"--workdir", source_path("examples/pytorch"), spec_path, "--"};
  for (const auto& a : torch_args("train.py")) cli.push_back(a);
  const int64_t id = submit_with_cli(d.url(), cli);
  ASSERT_GT(id, 0);
  EXPECT_EQ((*api.get_job(id))["spec"].value("bundle", "").size(), 64u);

  json job = wait_job(api, id, [](const json& j) { return progress_step(j) >= 120 || is_terminal(j); }, 180s);
  ASSERT_GE(progress_step(job), 120) << job.dump(2) << "\n--- daemon:\n" << d.process().output()
                                     << "\n--- cloudsim:\n" << sim.process().output();
  ASSERT_EQ(job["placement"]["chosen"]["option"], "spot") << job["placement"].dump(2);
  EXPECT_NE(job["placement"].dump().find("runtime from the spec's estimate"), std::string::npos)
      << job["placement"].dump(2);
  json first;
  for (const auto& i : instances(api))
    if (i["job_id"] == id) first = i;
  ASSERT_TRUE(first.is_object()) << instances(api).dump(2);
  const std::string inst = first["id"];
  const std::string log_path = tmp.file("cloudsim/instances/" + inst + "/worker.log");

  // The interruption: the notice makes the worker SIGTERM the program, which checkpoints.
  client::HttpClient http(sim.url());
  auto r = http.request("POST", "/instances/" + inst + "/interrupt", "{}");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  job = wait_job(api, id, [](const json& j) { return j.value("recoveries", 0) >= 1 || is_terminal(j); }, 60s);
  ASSERT_EQ(job.value("recoveries", 0), 1) << job.dump(2) << "\n--- instance worker:\n" << read_bytes(log_path);
  const json stored = checkpoints_of(api, id);
  ASSERT_FALSE(stored.value("checkpoints", json::array()).empty()) << stored.dump();
  const int64_t notice_step = stored["checkpoints"][0]["step"];
  // The newest stored checkpoint is the one the program took on SIGTERM (reason "signal").
  EXPECT_TRUE(std::regex_search(read_bytes(log_path),
                                std::regex("uploaded signal[a-z ]* checkpoint at step " + std::to_string(notice_step))))
      << read_bytes(log_path);

  job = wait_job(api, id, is_terminal, 240s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n--- daemon:\n" << d.process().output();
  EXPECT_EQ(job["recoveries"], 1);
  EXPECT_EQ(job["result"].value("weights_sha256", ""), reference["weights_sha256"]) << job["result"].dump();
  EXPECT_EQ(job["result"].value("steps", 0), 400);
  json second;
  for (const auto& i : instances(api))
    if (i["id"] != inst && i["launched_for_job_id"] == id) second = i;
  ASSERT_TRUE(second.is_object()) << instances(api).dump(2);
  const std::string second_log =
      read_bytes(tmp.file("cloudsim/instances/" + second["id"].get<std::string>() + "/worker.log"));
  EXPECT_NE(second_log.find("resuming from the checkpoint at step " + std::to_string(notice_step)), std::string::npos);
  EXPECT_NE(second_log.find("unpacked its code bundle"), std::string::npos) << second_log;
  ASSERT_TRUE(all_instances_ended(api, cloudsim, "torch-e2e", 60s)) << instances(api).dump(2);
  std::cout << "command job e2e: checkpoint at the notice: step " << notice_step << "; final weights "
            << job["result"]["weights_sha256"].get<std::string>() << " (uninterrupted run: "
            << reference["weights_sha256"].get<std::string>() << ")\n";
}

// A few paced steps (a notice lands mid-run) and no periodic checkpoint: the one stored is the
// checkpoint the notice made.
std::vector<std::string> ddp_args() {
  return {"--steps", "100", "--train-samples", "512", "--test-samples", "200", "--hidden", "32",
          "--batch-size", "64", "--log-every", "5", "--checkpoint-every", "1000", "--step-ms", "40"};
}

int count_events(const json& job, const std::string& type) {
  int n = 0;
  for (const auto& e : job.value("events", json::array())) n += e.value("type", "") == type;
  return n;
}

TEST(CommandJobs, AGangOnSpotInstancesCheckpointsOnANoticeToOneNodeAndResumesWithTheSameWeights) {
  if (!torch_distributed_available())
    JOBCTL_SKIP_UNLESS_CI("Debian's python3-torch with gloo is not installed (scripts/setup.sh)");
  jobctl::testing::TempDir tmp;
  // The uninterrupted run, 2 processes outside jobctl, while the gang runs.
  auto reference = std::async(std::launch::async, [] { return run_ddp_reference(ddp_args()); });

  CloudSim sim(tmp.file("cloudsim"), " --allow-commands");
  ASSERT_FALSE(sim.url().empty());
  Daemon d(tmp.file("data"), "127.0.0.1:0", 30, {"--config", write_config(tmp, sim.url(), "gang-e2e")});
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  cloud::SimProvider cloudsim({sim.url(), 5000});

  const json spec = {{"name", "ddp-spot"},
                     {"command", ddp_command(ddp_args())},
                     {"estimate", {{"hours", 0.5}, {"gpu", "V100"}}},
                     {"resources", {{"gpu", "V100"}, {"gpus", 1}, {"nodes", 2}}},
                     {"placement", {{"mode", "cloud"}, {"spot", "always"}}},
                     {"checkpoint", {{"grace_s", 10}}}};
  auto submitted = api.submit_job(spec.dump());
  ASSERT_TRUE(submitted) << submitted.error().message;
  const int64_t id = (*submitted)["id"];
  auto diagnostics = [&] {
    std::string s = "\n--- jobctld:\n" + d.process().output() + "\n--- cloudsim:\n" + sim.process().output();
    for (const auto& i : instances(api)) {
      const std::string inst = i.value("id", "");
      s += "\n--- instance " + inst + " worker:\n" + read_bytes(tmp.file("cloudsim/instances/" + inst + "/worker.log"));
    }
    return s;
  };

  json job = wait_job(api, id, [](const json& j) { return progress_step(j) >= 25 || is_terminal(j); }, 180s);
  ASSERT_GE(progress_step(job), 25) << job.dump(2) << diagnostics();
  const json chosen = job["placement"]["chosen"];
  ASSERT_EQ(chosen["option"], "spot") << job["placement"].dump(2);
  // Two instances of the chosen offer, launched for the job in the zone it was priced in.
  std::map<int64_t, std::string> instance_of_worker;
  for (const auto& i : instances(api)) {
    if (i["launched_for_job_id"] != id) continue;
    EXPECT_EQ(i["instance_type"], chosen["instance_type"]);
    EXPECT_EQ(i["zone"], chosen["zone"]);
    EXPECT_TRUE(i["spot"].get<bool>());
    if (i["worker_id"].is_number()) instance_of_worker[i["worker_id"].get<int64_t>()] = i["id"];
  }
  ASSERT_EQ(instance_of_worker.size(), 2u) << instances(api).dump(2);
  ASSERT_EQ(job["nodes"].size(), 2u) << job.dump(2);
  const int64_t rank0_worker = job["nodes"][0].value("worker_id", int64_t{0});
  const int64_t rank1_worker = job["nodes"][1].value("worker_id", int64_t{0});
  ASSERT_TRUE(instance_of_worker.count(rank0_worker) && instance_of_worker.count(rank1_worker)) << job.dump(2);
  const std::string rank0_instance = instance_of_worker[rank0_worker];
  const std::string rank1_instance = instance_of_worker[rank1_worker];

  // The notice, to rank 1's instance.
  const int64_t before_notice = progress_step(*api.get_job(id));
  client::HttpClient http(sim.url());
  auto r = http.request("POST", "/instances/" + rank1_instance + "/interrupt", "{}");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  job = wait_job(api, id, [](const json& j) { return count_events(j, "requeued") >= 1 || is_terminal(j); }, 60s);
  ASSERT_EQ(count_events(job, "requeued"), 1) << job.dump(2) << diagnostics();
  const json stored = checkpoints_of(api, id);
  ASSERT_FALSE(stored.value("checkpoints", json::array()).empty()) << stored.dump() << diagnostics();
  ASSERT_EQ(stored["checkpoints"].size(), 1u) << "the one the notice made (no periodic checkpoint): " << stored.dump();
  const int64_t notice_step = stored["checkpoints"][0]["step"];
  EXPECT_GE(notice_step, before_notice) << "a step reported before the notice was lost";
  EXPECT_LT(notice_step, 100);

  job = wait_job(api, id, is_terminal, 240s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << diagnostics();
  const std::string expected = ddp_weights_hash(reference.get());
  ASSERT_EQ(expected.size(), 64u);
  EXPECT_EQ(job["result"].value("weights_sha256", ""), expected) << job["result"].dump();
  EXPECT_EQ(job["result"].value("resumed_from", int64_t{0}), notice_step) << job["result"].dump();
  EXPECT_EQ(job["result"].value("world_size", 0), 2);

  // The events: the notice on the job; one gang stop, by whichever report came first: rank 1
  // giving its node back (node_given_back, then rank 0 hands back after its checkpoint) or rank
  // 0's exit 75 after it (a peer was asked to stop: one recovery); two leases; two instances for
  // the first placement and one for the second (rank 1's replacement).
  EXPECT_EQ(count_events(job, "spot_notice"), 1) << job["events"].dump(1);
  EXPECT_EQ(count_events(job, "requeued"), 1) << job["events"].dump(1);
  EXPECT_LE(job.value("recoveries", 0), 1);
  EXPECT_LE(count_events(job, "node_given_back"), 1) << job["events"].dump(1);
  EXPECT_EQ(count_events(job, "leased"), 2) << job["events"].dump(1);
  EXPECT_EQ(count_events(job, "instance_launched"), 3) << job["events"].dump(1);
  int64_t second_lease_has_rank0 = 0;
  int leases = 0;
  for (const auto& e : job["events"])
    if (e.value("type", "") == "leased" && ++leases == 2)
      for (const auto& n : e["detail"]["nodes"]) {
        EXPECT_NE(n.value("worker_id", int64_t{0}), rank1_worker) << "the noticed node is not placed again";
        second_lease_has_rank0 += n.value("worker_id", int64_t{0}) == rank0_worker;
      }
  EXPECT_EQ(second_lease_has_rank0, 1) << "rank 0's healthy instance is one of the gang's nodes again";
  // Each instance's time is billed to the job: a ledger segment per instance.
  std::set<std::string> billed;
  for (const auto& seg : job.value("segments", json::array())) billed.insert(seg.value("where", ""));
  for (const auto& i : instances(api))
    if (i["launched_for_job_id"] == id)
      EXPECT_TRUE(billed.count("instance:" + i["id"].get<std::string>())) << job["segments"].dump(1);
  ASSERT_TRUE(all_instances_ended(api, cloudsim, "gang-e2e", 60s)) << instances(api).dump(2);
  std::cout << "gang on spot e2e: notice at step >= " << before_notice << ", checkpoint at step " << notice_step
            << (count_events(job, "node_given_back") ? " (rank 1 gave its node back first)" : " (rank 0's exit 75 first)")
            << "; final weights " << job["result"]["weights_sha256"].get<std::string>() << " (2 processes outside jobctl: "
            << expected << ")\n";
}

TEST(CommandJobs, AFailingProgramFailsTheJobWithItsExitStatusAndLogTail) {
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  // The worker's API token is in its environment; the program must not see it.
  Process worker(worker_argv(d.url(), "w", tmp.file("work"), {"--allow-commands"}),
                 {.env = {"JOBCTL_TOKEN=jct_" + std::string(64, 'a')}});
  const json spec = {{"name", "fails"},
                     {"command", {"/bin/sh", "-c",
                                  "echo loading data job=$JOBCTL_JOB_ID token=${JOBCTL_TOKEN:-none}; "
                                  "echo 'ValueError: bad batch size' >&2; exit 3"}},
                     {"resources", {{"gpu", "cpu"}}}};
  auto submitted = api.submit_job(spec.dump());
  ASSERT_TRUE(submitted) << submitted.error().message;
  const int64_t id = (*submitted)["id"];
  const json job = wait_job(api, id, is_terminal, 60s);
  ASSERT_EQ(job.value("state", ""), "failed") << job.dump(2) << "\n--- worker:\n" << worker.output();
  const std::string error = job.value("error", "");
  EXPECT_NE(error.find("/bin/sh exit code 3"), std::string::npos) << error;
  EXPECT_NE(error.find("loading data job=" + std::to_string(id) + " token=none"), std::string::npos) << error;
  EXPECT_NE(error.find("ValueError: bad batch size"), std::string::npos) << error;
  // Its output is the job's log (sent with the heartbeats; the last of it before the report).
  auto log = api.http().request("GET", "/v1/jobs/" + std::to_string(id) + "/log");
  ASSERT_TRUE(log);
  ASSERT_EQ(log->status, 200) << log->body;
  const json chunk = json::parse(log->body);
  EXPECT_NE(chunk.value("text", "").find("ValueError: bad batch size"), std::string::npos) << log->body;
  // Every line numbered and stamped with the time the worker read it (none before the job began).
  ASSERT_FALSE(chunk["lines"].empty());
  EXPECT_EQ(chunk.value("next", 0), chunk["lines"].back().value("n", 0));
  for (const json& l : chunk["lines"]) EXPECT_GE(l.value("time_ms", int64_t{0}), job.value("created_ms", int64_t{0})) << l.dump();
  const auto cli = jobctl::testing::run_to_end({env_or_fail("JOBCTL_CLI"), "--server", d.url(), "logs", std::to_string(id)});
  EXPECT_NE(cli.out.find("ValueError: bad batch size"), std::string::npos) << cli.out << cli.err;
}

TEST(CommandJobs, AProgramIgnoringSigtermIsKilledAfterGraceAndResumesFromItsLastPeriodicCheckpoint) {
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  const json spec = {{"name", "stubborn"},
                     {"command", {kDebianPython, source_path("tests/e2e/programs/ignores_sigterm.py"), "60"}},
                     {"checkpoint", {{"grace_s", 1}}},
                     {"resources", {{"gpu", "cpu"}}}};
  auto submitted = api.submit_job(spec.dump());
  ASSERT_TRUE(submitted) << submitted.error().message;
  const int64_t id = (*submitted)["id"];

  Process first(worker_argv(d.url(), "first", tmp.file("work1"), {"--allow-commands"}));
  json job = wait_job(api, id, [](const json& j) { return progress_step(j) >= 12 || is_terminal(j); }, 60s);
  ASSERT_GE(progress_step(job), 12) << job.dump(2) << "\n--- worker:\n" << first.output();
  // Stopping the worker SIGTERMs the program, which ignores it: killed after grace_s.
  first.stop(SIGTERM, 30s);
  EXPECT_NE(first.output().find("did not stop in time; killing it"), std::string::npos) << first.output();
  job = wait_job(api, id, [](const json& j) { return j.value("state", "") != "running"; }, 30s);
  const json stored = checkpoints_of(api, id);
  ASSERT_FALSE(stored.value("checkpoints", json::array()).empty()) << stored.dump() << "\n" << first.output();
  const int64_t periodic = stored["checkpoints"][0]["step"];
  EXPECT_EQ(periodic % 5, 0) << "only periodic checkpoints were ever taken";
  EXPECT_GE(periodic, 10);

  Process second(worker_argv(d.url(), "second", tmp.file("work2"), {"--allow-commands"}));
  job = wait_job(api, id, is_terminal, 60s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n--- worker:\n" << second.output();
  EXPECT_EQ(job["result"].value("resumed_from", -1), periodic) << job["result"].dump();
  EXPECT_EQ(job["result"].value("steps", 0), 60);
}

// Setup: a virtualenv with Debian's packages visible (--system-site-packages), made before the
// program, once per worker for a bundle and setup: the program runs in it and imports Debian's
// torch; a second job with the same setup finds it made (the setup's own counter shows one run)
// and its log says so; a failing setup fails its job with the command, its exit status and its
// output.
TEST(CommandJobs, SetupMakesAVirtualenvOnceAndTheProgramRunsInIt) {
  if (!torch_available()) JOBCTL_SKIP_UNLESS_CI("Debian's python3-torch is not installed (scripts/setup.sh)");
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  Process worker(worker_argv(d.url(), "w", tmp.file("work"), {"--allow-commands"}));
  const json setup = {std::string(kDebianPython) + " -m venv --system-site-packages --without-pip .venv",
                      "echo made >> setup-runs.txt"};
  const std::string program =
      "import json, sys, torch\n"
      "print(json.dumps({'event': 'result', 'in_venv': sys.prefix != sys.base_prefix, 'torch': torch.__version__,\n"
      "                  'setup_runs': len(open('setup-runs.txt').read().split())}))\n";
  auto run_job = [&](const std::string& name, const json& commands) {
    const json spec = {{"name", name},
                       {"command", {".venv/bin/python", "-c", program}},
                       {"setup", commands},
                       {"resources", {{"gpu", "cpu"}}}};
    auto submitted = api.submit_job(spec.dump());
    EXPECT_TRUE(submitted) << submitted.error().message;
    if (!submitted) return json();
    const int64_t id = (*submitted)["id"];
    json job = wait_job(api, id, is_terminal, 120s);
    job["log_text"] = job_log_text(api, id);
    return job;
  };

  const json first = run_job("venv-first", setup);
  ASSERT_EQ(first.value("state", ""), "succeeded") << first.dump(2) << "\n--- worker:\n" << worker.output();
  EXPECT_TRUE(first["result"].value("in_venv", false)) << first["result"].dump();
  EXPECT_FALSE(first["result"].value("torch", "").empty());
  EXPECT_EQ(first["result"].value("setup_runs", 0), 1);
  EXPECT_NE(first["log_text"].get<std::string>().find("setup[0]$ " + std::string(kDebianPython) + " -m venv"), std::string::npos)
      << first["log_text"];

  const json second = run_job("venv-second", setup);
  ASSERT_EQ(second.value("state", ""), "succeeded") << second.dump(2) << "\n--- worker:\n" << worker.output();
  EXPECT_TRUE(second["result"].value("in_venv", false));
  EXPECT_EQ(second["result"].value("setup_runs", 0), 1) << "the setup ran again";
  EXPECT_NE(second["log_text"].get<std::string>().find("not run again"), std::string::npos) << second["log_text"];

  const json failed = run_job("setup-fails", json{"echo about to fail; exit 4"});
  ASSERT_EQ(failed.value("state", ""), "failed") << failed.dump(2);
  const std::string error = failed.value("error", "");
  EXPECT_NE(error.find("setup[0]"), std::string::npos) << error;
  EXPECT_NE(error.find("exit code 4"), std::string::npos) << error;
  EXPECT_NE(error.find("about to fail"), std::string::npos) << error;
}

TEST(CommandJobs, AWorkerWithoutAllowCommandsNeverLeasesOne) {
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  const json command = {{"name", "echo"},
                        {"command", {"/bin/sh", "-c", "echo '{\"event\":\"result\",\"said\":\"hello\"}'"}},
                        {"resources", {{"gpu", "cpu"}}}};
  auto c = api.submit_job(command.dump());
  ASSERT_TRUE(c) << c.error().message;
  const int64_t command_id = (*c)["id"];
  json model = json::parse(recovery_spec("model-job"));
  model["train"]["epochs"] = 1;
  auto m = api.submit_job(model.dump());
  ASSERT_TRUE(m) << m.error().message;
  const int64_t model_id = (*m)["id"];

  // Queued first, the command job is passed over: the worker takes the model's job behind it.
  Process plain(worker_argv(d.url(), "plain", tmp.file("work1")));
  json job = wait_job(api, model_id, is_terminal, 120s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n--- worker:\n" << plain.output();
  json cmd = *api.get_job(command_id);
  EXPECT_TRUE(cmd.value("state", "") == "queued" || cmd.value("state", "") == "placed") << cmd.dump(2);
  const auto types = event_types(cmd);
  EXPECT_EQ(std::find(types.begin(), types.end(), "leased"), types.end()) << cmd["events"].dump(2);
  // `jobctl show` says why it waits, in words that say what to do.
  auto show = [&] {
    return jobctl::testing::run_to_end(
        {env_or_fail("JOBCTL_CLI"), "--server", d.url(), "show", std::to_string(command_id)}, 60s);
  };
  std::string waiting;
  for (int i = 0; i < 100 && waiting.find("no worker can run commands") == std::string::npos; ++i) {
    waiting = show().out;
    if (waiting.find("no worker can run commands") == std::string::npos) std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(waiting.find("waiting:    no option can run it: no worker can run commands (start one with "
                         "jobctl-worker --allow-commands)"),
            std::string::npos)
      << waiting;
  EXPECT_NE(waiting.find("queue:      #1 of 1 waiting for unplaced: cpu x1, command"), std::string::npos) << waiting;
  plain.stop(SIGTERM, 30s);

  Process allowed(worker_argv(d.url(), "allowed", tmp.file("work2"), {"--allow-commands"}));
  cmd = wait_job(api, command_id, is_terminal, 60s);
  ASSERT_EQ(cmd.value("state", ""), "succeeded") << cmd.dump(2) << "\n--- worker:\n" << allowed.output();
  EXPECT_EQ(cmd["result"].value("said", ""), "hello");
  // Shown as what it is: the command, what the program printed, an hour that was only assumed.
  const std::string done = show().out;
  EXPECT_NE(done.find("command:    /bin/sh -c \"echo"), std::string::npos) << done;
  EXPECT_NE(done.find("result:     said hello\n"), std::string::npos) << done;
  EXPECT_NE(done.find("runtime:    assumed 1.00 h (no runtime estimate"), std::string::npos) << done;
  EXPECT_EQ(done.find("error "), std::string::npos) << done;
  EXPECT_EQ(done.find("accuracy"), std::string::npos) << done;
  EXPECT_EQ(done.find("waiting:"), std::string::npos) << done;
}

TEST(CommandJobs, SubmitFlagsReachTheStoredSpec) {
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  const std::string file = tmp.file("spec.json");
  std::ofstream(file) << R"({"name":"flags-e2e","env":{"FROM_FILE":"1","OVER":"file"},
    "placement":{"mode":"cloud","queue_if_unplaceable":true}})";
  const int64_t id = submit_with_cli(
      d.url(), {file, "--mode", "local", "--spot", "never", "--deadline-hours", "6", "--max-usd-per-hour", "2.5",
                "--gpu", "V100", "--gpus", "2", "--env", "OVER=flag", "--env", "OMP_NUM_THREADS=1", "--setup",
                "python3 -m venv --system-site-packages .venv", "--setup", "true", "--estimate-hours", "0.25", "--",
                "/bin/sh", "-c", "exit 0"});
  ASSERT_GT(id, 0);
  client::ApiClient api(d.url());
  auto job = api.get_job(id);
  ASSERT_TRUE(job) << job.error().message;
  const json& spec = (*job)["spec"];
  EXPECT_EQ(spec["command"], json::array({"/bin/sh", "-c", "exit 0"}));
  EXPECT_EQ(spec["placement"], json::parse(R"({"mode":"local","spot":"never","max_usd_per_hour":2.5,
    "deadline_hours":6.0,"queue_if_unplaceable":true})")) << spec.dump(2);
  EXPECT_EQ(spec["resources"]["gpu"], "V100");
  EXPECT_EQ(spec["resources"]["gpus"], 2);
  EXPECT_EQ(spec["env"], json::parse(R"({"FROM_FILE":"1","OVER":"flag","OMP_NUM_THREADS":"1"})")) << spec.dump(2);
  EXPECT_EQ(spec["setup"], json::array({"python3 -m venv --system-site-packages .venv", "true"}));
  EXPECT_EQ(spec["estimate"]["hours"], 0.25);

  // A bad value: a message naming the flag, a non-zero exit, nothing submitted.
  const auto refused = jobctl::testing::run_to_end(
      {env_or_fail("JOBCTL_CLI"), "--server", d.url(), "submit", "--mode", "moon", "--", "/bin/true"}, 60s);
  EXPECT_FALSE(refused.status.success());
  EXPECT_NE(refused.err.find("--mode must be one of auto, local, cloud"), std::string::npos) << refused.err;
  auto all = api.list_jobs(std::nullopt, 10, "");
  ASSERT_TRUE(all);
  EXPECT_EQ((*all)["jobs"].size(), 1u);
}

}  // namespace
}  // namespace jobctl::e2e
