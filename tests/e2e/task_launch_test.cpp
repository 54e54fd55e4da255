// Task files end to end (docs/task-files.md): the jobctl binary launches the documented examples
// against a real jobctld with a real command-running worker on loopback.
//
// SweepRunsEachCaseAndListsTheirResultsSideBySide: examples/tasks/sweep.yaml makes a job array
// of 3 jobs, each program sees its JOBCTL_PARAM_LR and JOBCTL_ARRAY_INDEX, and `jobctl ls --array`
// lists each case's parameters, state, result and cost side by side; cancelling the array after
// the fact changes nothing that ended.
//
// QueuedArrayIsCancelledWholeAndABadCaseStoresNothing: `jobctl cancel aID` cancels every waiting
// job of an array; a sweep jobctld refuses stores none of its jobs; `jobctl submit` sends a JSON
// spec's sweep as an array.
//
// PyTorchExampleDryRunQuotesWithoutStoringAndErrorsSayWhere: examples/tasks/pytorch.yaml and
// pytorch-sweep.yaml with --dry-run are validated, packed and quoted, and nothing is stored; a
// --set with a bad value is refused naming the --set, and a task file's error (2 nodes) names its
// file, line, column and field.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "tests/e2e/recovery_support.h"
#include "tests/support/temp_dir.h"

namespace jobctl::e2e {
namespace {

std::string source_file(const std::string& relative) { return env_or_fail("JOBCTL_SOURCE_DIR") + "/" + relative; }

process::RunResult jobctl_cli(const std::string& url, std::vector<std::string> args) {
  args.insert(args.begin(), {env_or_fail("JOBCTL_CLI"), "--server", url});
  return jobctl::testing::run_to_end(args, 60s);
}

TEST(TaskLaunch, SweepRunsEachCaseAndListsTheirResultsSideBySide) {
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  Process worker(worker_argv(d.url(), "w", tmp.file("work"), {"--allow-commands"}));

  const auto launched = jobctl_cli(d.url(), {"-o", "json", "launch", source_file("examples/tasks/sweep.yaml")});
  ASSERT_TRUE(launched.success()) << launched.out << launched.err;
  const json answer = json::parse(launched.out, nullptr, false);
  ASSERT_TRUE(answer.is_object()) << launched.out;
  const int64_t array_id = answer["array_id"];
  ASSERT_EQ(answer["jobs"].size(), 3u) << answer.dump(2);
  for (const auto& j : answer["jobs"]) EXPECT_EQ(j["array_id"], array_id);

  const double lrs[] = {0.1, 0.01, 0.001};
  for (size_t i = 0; i < 3; ++i) {
    const int64_t id = answer["jobs"][i]["id"];
    const json job = wait_job(api, id, is_terminal, 120s);
    ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n--- worker:\n" << worker.output();
    EXPECT_EQ(job["result"]["index"], static_cast<int>(i)) << job["result"].dump();
    EXPECT_DOUBLE_EQ(job["result"]["lr"].get<double>(), lrs[i]) << job["result"].dump();
    EXPECT_EQ(job["spec"]["array"]["parameters"]["lr"], json(lrs[i]).dump()) << job["spec"].dump();
  }
  // The API lists the array's jobs, and only them.
  auto listed = api.list_jobs(std::nullopt, 10, "", array_id);
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_EQ((*listed)["jobs"].size(), 3u);

  const auto table = jobctl_cli(d.url(), {"ls", "--array", "a" + std::to_string(array_id)});
  ASSERT_TRUE(table.success()) << table.out << table.err;
  EXPECT_NE(table.out.find("INDEX"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("COST"), std::string::npos) << table.out;
  for (const char* cell : {"lr=0.1 ", "lr=0.01 ", "lr=0.001 ", "loss 0.0081", "loss 0", "loss 8.1e-05"})
    EXPECT_NE(table.out.find(cell), std::string::npos) << cell << " not in\n" << table.out;
  EXPECT_EQ(std::count(table.out.begin(), table.out.end(), '\n'), 4) << table.out;  // header + 3 cases

  // Cancelling an array whose jobs all ended changes none of them.
  const auto cancelled = jobctl_cli(d.url(), {"cancel", "a" + std::to_string(array_id)});
  ASSERT_TRUE(cancelled.success()) << cancelled.out << cancelled.err;
  EXPECT_EQ(cancelled.out.find("cancelled"), std::string::npos) << cancelled.out;
  const auto unknown = jobctl_cli(d.url(), {"cancel", "a999"});
  EXPECT_FALSE(unknown.success());
  EXPECT_NE(unknown.err.find("job array 999 does not exist"), std::string::npos) << unknown.err;
}

TEST(TaskLaunch, QueuedArrayIsCancelledWholeAndABadCaseStoresNothing) {
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"));  // no worker: the jobs wait
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  const std::string task = tmp.file("wait.yaml");
  std::ofstream(task) << "run: 'true'\nresources: {gpu: cpu}\nplacement: {queue_if_unplaceable: true}\n"
                         "sweep:\n  cases:\n    - {seed: 1}\n    - {seed: 2}\n";
  const auto launched = jobctl_cli(d.url(), {"-o", "json", "launch", task});
  ASSERT_TRUE(launched.success()) << launched.out << launched.err;
  const int64_t array_id = json::parse(launched.out)["array_id"];
  const auto cancelled = jobctl_cli(d.url(), {"-o", "json", "cancel", "a" + std::to_string(array_id)});
  ASSERT_TRUE(cancelled.success()) << cancelled.out << cancelled.err;
  const json jobs = json::parse(cancelled.out)["jobs"];
  ASSERT_EQ(jobs.size(), 2u);
  for (const auto& j : jobs) EXPECT_EQ(j["state"], "cancelled") << j.dump();

  // A case jobctld refuses (an unknown GPU) refuses the whole array: nothing more is stored.
  const auto refused = jobctl_cli(d.url(), {"launch", task, "--set", "resources.gpu=B9000"});
  EXPECT_FALSE(refused.success());
  EXPECT_NE(refused.err.find("--set resources.gpu"), std::string::npos) << refused.err;
  auto all = api.list_jobs(std::nullopt, 10, "");
  ASSERT_TRUE(all);
  EXPECT_EQ((*all)["jobs"].size(), 2u) << all->dump(2);

  // A JSON spec with a sweep, through `jobctl submit`, is an array too.
  const std::string spec = tmp.file("sweep.json");
  std::ofstream(spec) << R"({"command": ["true"], "resources": {"gpu": "cpu"}, "placement": {"queue_if_unplaceable": true},
                             "sweep": {"grid": {"a": [1, 2], "b": ["x"]}}})";
  const auto submitted = jobctl_cli(d.url(), {"-o", "json", "submit", spec});
  ASSERT_TRUE(submitted.success()) << submitted.out << submitted.err;
  const json array = json::parse(submitted.out, nullptr, false);
  ASSERT_TRUE(array.is_object()) << submitted.out;
  EXPECT_EQ(array["jobs"].size(), 2u);
  EXPECT_EQ(array["array_id"], array["jobs"][0]["id"]);
}

TEST(TaskLaunch, PyTorchExampleDryRunQuotesWithoutStoringAndErrorsSayWhere) {
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  Process worker(worker_argv(d.url(), "w", tmp.file("work"), {"--allow-commands"}));
  const auto dry = jobctl_cli(d.url(), {"launch", "--dry-run", source_file("examples/tasks/pytorch.yaml")});
  ASSERT_TRUE(dry.success()) << dry.out << dry.err;
  EXPECT_NE(dry.out.find("valid; 1 job (dry run: nothing submitted)"), std::string::npos) << dry.out;
  EXPECT_NE(dry.err.find("packed "), std::string::npos) << dry.err;
  const auto sweep = jobctl_cli(d.url(), {"launch", "--dry-run", source_file("examples/tasks/pytorch-sweep.yaml")});
  ASSERT_TRUE(sweep.success()) << sweep.out << sweep.err;
  EXPECT_NE(sweep.out.find("valid; 6 jobs"), std::string::npos) << sweep.out;
  auto none = api.list_jobs(std::nullopt, 10, "");
  ASSERT_TRUE(none);
  EXPECT_TRUE((*none)["jobs"].empty()) << none->dump(2);

  const auto bad_set = jobctl_cli(d.url(), {"launch", "--dry-run", source_file("examples/tasks/pytorch.yaml"),
                                            "--set", "resources.gpus=0"});
  EXPECT_FALSE(bad_set.success());
  EXPECT_NE(bad_set.err.find("--set resources.gpus: resources.gpus"), std::string::npos) << bad_set.err;
  const std::string task = tmp.file("two-nodes.yaml");
  std::ofstream(task) << "run: python3 train.py\nresources:\n  gpu: cpu\n  nodes: 2\n";
  // The refusal is judged by the workers registered: the one here first (it measures its CPU at
  // start).
  ASSERT_TRUE(jobctl::testing::poll_until([&] {
    auto w = api.list_workers();
    return w && !(*w)["workers"].empty();
  }, 30s)) << worker.output();
  // Two machines at once, and the one worker here: refused at submit, where the file says so.
  const auto two = jobctl_cli(d.url(), {"launch", task});
  EXPECT_FALSE(two.success());
  EXPECT_NE(two.err.find(task + ":4:10: needs 2 machines at once; the most of one kind registered is 1"),
            std::string::npos)
      << two.err;
  EXPECT_NE(two.err.find("(field: resources.nodes)"), std::string::npos) << two.err;
}

}  // namespace
}  // namespace jobctl::e2e
