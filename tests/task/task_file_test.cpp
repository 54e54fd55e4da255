// Task files: YAML into the JSON job spec, validated by the spec's parser, errors at the line and
// column the field was written at.
#include "task/task_file.h"

#include <gtest/gtest.h>

namespace jobctl::task {
namespace {

using nlohmann::json;

constexpr const char* kTask = R"(name: mnist
workdir: code
setup:
  - pip install -r requirements.txt
run: python3 train.py --lr $JOBCTL_PARAM_LR
env:
  OMP_NUM_THREADS: 1
  QUOTED: "x"
resources:
  gpu: V100
  gpus: 1
  nodes: 1
placement:
  mode: local
  spot: never
  deadline_hours: 4
  max_usd_per_hour: 2.5
estimate:
  hours: 0.5
priority: 70
)";

TEST(TaskFile, BecomesTheJobSpec) {
  auto task = parse_task_file(kTask, "dir/task.yaml");
  ASSERT_TRUE(task) << task.error().message;
  const json& s = task->spec;
  EXPECT_EQ(s["name"], "mnist");
  EXPECT_EQ(s["command"], json::array({"/bin/sh", "-c", "python3 train.py --lr $JOBCTL_PARAM_LR"}));
  EXPECT_EQ(s["setup"], json::array({"pip install -r requirements.txt"}));
  EXPECT_EQ(s["env"]["OMP_NUM_THREADS"], "1");  // env values are text however they look
  EXPECT_EQ(s["resources"], json({{"gpu", "V100"}, {"gpus", 1}, {"nodes", 1}}));  // the spec validator reads nodes
  EXPECT_EQ(s["placement"]["deadline_hours"], 4);
  EXPECT_EQ(s["placement"]["max_usd_per_hour"], 2.5);
  EXPECT_EQ(s["priority"], 70);
  EXPECT_FALSE(s.contains("workdir"));
  EXPECT_EQ(task->workdir, "dir/code");  // relative to the task file's folder
  auto jobs = validate_task(*task);
  ASSERT_TRUE(jobs) << jobs.error().message;
  EXPECT_EQ(*jobs, 1);
}

TEST(TaskFile, RunAsAListIsTheProgramAndItsArguments) {
  auto task = parse_task_file("run: [python3, train.py, --steps, 30]\n", "train.yaml");
  ASSERT_TRUE(task) << task.error().message;
  EXPECT_EQ(task->spec["command"], json::array({"python3", "train.py", "--steps", "30"}));
  EXPECT_EQ(task->spec["name"], "train");  // the task file's name when none is given
}

TEST(TaskFile, ErrorsNameTheFileLineAndField) {
  auto task = parse_task_file("run: python3 x.py\nresources:\n  gpu: any\n  gpus: 0\n", "t.yaml");
  ASSERT_TRUE(task);
  auto jobs = validate_task(*task);
  ASSERT_FALSE(jobs);
  EXPECT_EQ(jobs.error().field, "resources.gpus");
  EXPECT_EQ(jobs.error().message.rfind("t.yaml:4:9: resources.gpus", 0), 0u) << jobs.error().message;
}

TEST(TaskFile, AnUnknownFieldIsNamedWhereItIs) {
  auto task = parse_task_file("run: x\npriorty: 3\n", "t.yaml");
  ASSERT_TRUE(task);
  auto jobs = validate_task(*task);
  ASSERT_FALSE(jobs);
  EXPECT_EQ(jobs.error().field, "priorty");
  EXPECT_EQ(jobs.error().message.rfind("t.yaml:2:", 0), 0u) << jobs.error().message;
}

TEST(TaskFile, RunErrorsSayRun) {
  auto task = parse_task_file("run: [\"\", a]\n", "t.yaml");
  ASSERT_TRUE(task);
  auto jobs = validate_task(*task);
  ASSERT_FALSE(jobs);
  EXPECT_EQ(jobs.error().field, "run[0]");
  EXPECT_NE(jobs.error().message.find("t.yaml:1:7: run[0]"), std::string::npos) << jobs.error().message;
}

TEST(TaskFile, NodesMakeAGangAndABadCountIsPlacedInTheFile) {
  auto task = parse_task_file("run: x\nresources:\n  nodes: 2\n", "t.yaml");
  ASSERT_TRUE(task) << task.error().message;
  EXPECT_EQ(task->spec["resources"]["nodes"], 2);
  ASSERT_TRUE(validate_task(*task));
  auto too_many = parse_task_file("run: x\nresources:\n  nodes: 65\n", "t.yaml");
  ASSERT_TRUE(too_many);
  auto jobs = validate_task(*too_many);
  ASSERT_FALSE(jobs);
  EXPECT_EQ(jobs.error().field, "resources.nodes");
  EXPECT_EQ(jobs.error().message.rfind("t.yaml:3:10: resources.nodes", 0), 0u) << jobs.error().message;
}

TEST(TaskFile, AnImageItsPullAndItsMountsAreTheSpecs) {
  auto task = parse_task_file(R"(run: python3 train.py
image: 127.0.0.1:5000/team/train:2
image_pull: never
mounts:
  - source: /data/sets
    target: /data
  - {source: /scratch, target: /scratch, writable: true}
)",
                              "t.yaml");
  ASSERT_TRUE(task) << task.error().message;
  EXPECT_EQ(task->spec["image"], "127.0.0.1:5000/team/train:2");
  EXPECT_EQ(task->spec["image_pull"], "never");
  EXPECT_EQ(task->spec["mounts"], json::array({{{"source", "/data/sets"}, {"target", "/data"}},
                                               {{"source", "/scratch"}, {"target", "/scratch"}, {"writable", true}}}));
  ASSERT_TRUE(validate_task(*task));

  auto twice = parse_task_file("run: x\nimage: a.io/b\nmounts:\n  - {source: /a, target: /d}\n  - {source: /b, target: /d}\n",
                               "t.yaml");
  ASSERT_TRUE(twice) << twice.error().message;
  auto jobs = validate_task(*twice);
  ASSERT_FALSE(jobs);
  EXPECT_EQ(jobs.error().field, "mounts[1].target");
  EXPECT_EQ(jobs.error().message.rfind("t.yaml:5:", 0), 0u) << jobs.error().message;
  auto no_registry = parse_task_file("run: x\nimage: python:3.11\n", "t.yaml");
  ASSERT_TRUE(no_registry);
  jobs = validate_task(*no_registry);
  ASSERT_FALSE(jobs);
  EXPECT_EQ(jobs.error().field, "image");
  EXPECT_EQ(jobs.error().message.rfind("t.yaml:2:8: image", 0), 0u) << jobs.error().message;
}

TEST(TaskFile, OutputsAndMissingRunAreExplained) {
  auto outputs = parse_task_file("run: x\noutputs: [model.pt]\n", "t.yaml");
  ASSERT_FALSE(outputs);
  EXPECT_EQ(outputs.error().field, "outputs");
  EXPECT_NE(outputs.error().message.find("JOBCTL_OUTPUT_DIR"), std::string::npos);
  auto no_run = parse_task_file("name: x\n", "t.yaml");
  ASSERT_FALSE(no_run);
  EXPECT_EQ(no_run.error().field, "run");
}

TEST(TaskFile, NotYamlSaysWhere) {
  auto task = parse_task_file("run: [a, b\nname: x\n", "t.yaml");
  ASSERT_FALSE(task);
  EXPECT_EQ(task.error().message.rfind("t.yaml:", 0), 0u) << task.error().message;
  EXPECT_NE(task.error().message.find("not valid YAML"), std::string::npos);
}

TEST(TaskFile, SetReplacesAFieldAndErrorsNameTheSet) {
  auto task = parse_task_file(kTask, "t.yaml", {"resources.gpus=2", "placement.spot=always", "env.EXTRA=on"});
  ASSERT_TRUE(task) << task.error().message;
  EXPECT_EQ(task->spec["resources"]["gpus"], 2);
  EXPECT_EQ(task->spec["placement"]["spot"], "always");
  EXPECT_EQ(task->spec["env"]["EXTRA"], "on");
  auto bad = parse_task_file(kTask, "t.yaml", {"priority=500"});
  ASSERT_TRUE(bad);
  auto jobs = validate_task(*bad);
  ASSERT_FALSE(jobs);
  EXPECT_EQ(jobs.error().message.rfind("--set priority: priority", 0), 0u) << jobs.error().message;
  auto malformed = parse_task_file(kTask, "t.yaml", {"novalue"});
  ASSERT_FALSE(malformed);
  EXPECT_EQ(malformed.error().field, "--set");
}

TEST(TaskFile, ASweepCountsItsCasesAndItsErrorsAreLocated) {
  auto task = parse_task_file("run: python3 t.py\nsweep:\n  grid:\n    lr: [0.1, 0.01, 0.001]\n", "t.yaml");
  ASSERT_TRUE(task) << task.error().message;
  EXPECT_EQ(task->spec["sweep"]["grid"]["lr"], json::array({0.1, 0.01, 0.001}));
  auto jobs = validate_task(*task);
  ASSERT_TRUE(jobs) << jobs.error().message;
  EXPECT_EQ(*jobs, 3);
  auto bad = parse_task_file("run: x\nsweep:\n  grid:\n    lr: [0.1, [1]]\n", "t.yaml");
  ASSERT_TRUE(bad);
  auto refused = validate_task(*bad);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().field, "sweep.grid.lr[1]");
  EXPECT_EQ(refused.error().message.rfind("t.yaml:4:15: sweep.grid.lr[1]", 0), 0u) << refused.error().message;
}

TEST(TaskFile, AServersErrorIsLocatedToo) {
  auto task = parse_task_file(kTask, "t.yaml");
  ASSERT_TRUE(task);
  Error e = locate_error(*task, make_error(ErrorCode::invalid_argument, "resources.gpu: unknown GPU 'V100'", "resources.gpu"));
  EXPECT_EQ(e.message, "t.yaml:10:8: resources.gpu: unknown GPU 'V100'");
}

// Nested aliases: ten lines that stand for 10^9 values once written out (jobctld resolves task
// files sent by its users). Refused when their bytes pass kMaxTaskBytes, long before memory goes.
TEST(TaskFile, AliasesThatStandForTooManyValuesAreRefused) {
  std::string text = "run: x\na0: &a0 [v, v, v, v, v, v, v, v, v, v]\n";
  for (int i = 1; i < 9; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", " : "") + prev;
    text += "]\n";
  }
  auto task = parse_task_file(text, "bomb.yaml");
  ASSERT_FALSE(task);
  EXPECT_EQ(task.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(task.error().message.find("more than 4194304 bytes once its aliases are written out"), std::string::npos)
      << task.error().message;
  EXPECT_EQ(task.error().message.rfind("bomb.yaml:", 0), 0u) << task.error().message;
  // A few aliases, as a task file may use them, are fine.
  auto small = parse_task_file("run: x\nenv: &e {A: \"1\"}\nsweep:\n  cases: [{lr: 0.1}, {lr: 0.2}]\n", "t.yaml");
  ASSERT_TRUE(small) << small.error().message;
}

// A long key over a few aliased lists: 40,000 values, each named by a path that repeats the
// 16 KiB key (650 MB of names), from 17 KB of text.
TEST(TaskFile, ALongKeyOverAliasedValuesIsRefusedByItsBytes) {
  std::string text = "run: x\nl: &l [";
  for (int i = 0; i < 200; ++i) text += i ? ",v" : "v";
  text += "]\n? " + std::string(16 * 1024, 'k') + "\n: [";
  for (int i = 0; i < 200; ++i) text += i ? ",*l" : "*l";
  text += "]\n";
  auto task = parse_task_file(text, "long.yaml");
  ASSERT_FALSE(task);
  EXPECT_NE(task.error().message.find("bytes once its aliases are written out"), std::string::npos) << task.error().message;
  EXPECT_LT(task.error().message.size(), 1000u) << "the error repeats the key";
}

// More YAML values than a task has are refused from the parser's events, before a tree is built.
TEST(TaskFile, MoreValuesThanATaskHasAreRefusedAsWritten) {
  std::string text = "run: x\nl: [";
  for (int i = 0; i < 30'000; ++i) text += i ? ",a" : "a";
  text += "]\n";
  auto task = parse_task_file(text, "flat.yaml");
  ASSERT_FALSE(task);
  EXPECT_NE(task.error().message.find("more than 20000 YAML values"), std::string::npos) << task.error().message;
  EXPECT_EQ(task.error().message.rfind("flat.yaml:2:", 0), 0u) << task.error().message;
}

}  // namespace
}  // namespace jobctl::task
