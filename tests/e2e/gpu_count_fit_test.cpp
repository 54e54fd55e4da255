// The GPU count chosen to fit (docs/cost-model.md, "The GPU count chosen to fit"), end to end:
// jobctld, jobctl-worker, jobctl-cloudsim and the jobctl CLI as real processes on loopback.
//
// AnAutoJobRunsOnTheGpusChosenToFit: a command job describing a 7B fine-tune with
// resources.gpus "auto" is submitted, placed on an 8 x H100 (fake GPUs) worker at the 2 GPUs that
// hold it, leased with those 2 (CUDA_VISIBLE_DEVICES=0,1 in the program's environment) and shown
// with that count.
//
// QuoteListsTheCountsThatHoldASevenBillionParameterFineTune: `jobctl quote` over cloudsim's seed
// catalog lists the GPU models and counts that hold it, each with its cost; a fixed `gpus: 1` on
// a 24 GB card is quoted as fitting nowhere and refused by `jobctl submit`, both naming the figures.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/e2e/cloud_support.h"
#include "tests/e2e/recovery_support.h"
#include "tests/support/temp_dir.h"

namespace jobctl::e2e {
namespace {

std::string fixture(const std::string& name) {
  return env_or_fail("JOBCTL_SOURCE_DIR") + "/tests/fixtures/nvidia-smi/" + name;
}

// A 7B full fine-tune (Llama-2-7B's shape, bf16, AdamW, seq 2048, selective recomputation, ZeRO-3)
// as a command job running `command`.
json seven_b_spec(const json& gpu, const json& gpus, const json& command, const std::string& mode) {
  return {{"name", "ft7b"},
          {"command", command},
          {"resources", {{"gpu", gpu}, {"gpus", gpus}}},
          {"placement", {{"mode", mode}}},
          {"estimate",
           {{"model",
             {{"layers", 32}, {"hidden", 4096}, {"heads", 32}, {"vocab", 32000}, {"seq_len", 2048},
              {"tokens", 1000000000}, {"precision", "bf16"}, {"optimizer", "adamw"}, {"recompute", "selective"},
              {"zero_stage", 3}}}}}};
}

process::RunResult jobctl_cli(const std::string& url, std::vector<std::string> args) {
  std::vector<std::string> argv = {env_or_fail("JOBCTL_CLI"), "--server", url};
  argv.insert(argv.end(), args.begin(), args.end());
  return jobctl::testing::run_to_end(argv, 60s);
}

TEST(GpuCountFit, AnAutoJobRunsOnTheGpusChosenToFit) {
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  Process worker(worker_argv(d.url(), "p5", tmp.file("work"), {"--fake-gpus", fixture("h100-sxm-x8"), "--allow-commands"}));
  // The program says which GPUs it was given.
  const json command = {"/bin/sh", "-c",
                        "printf '{\"event\":\"result\",\"visible\":\"%s\"}\\n' \"$CUDA_VISIBLE_DEVICES\""};
  const std::string spec_path = tmp.file("auto.json");
  std::ofstream(spec_path) << seven_b_spec("any", "auto", command, "local").dump();
  const auto submitted = jobctl_cli(d.url(), {"-o", "json", "submit", spec_path});
  ASSERT_TRUE(submitted.success()) << submitted.describe() << "\n" << submitted.out << submitted.err;
  const int64_t id = json::parse(submitted.out)["id"];

  const json job = wait_job(api, id, is_terminal, 60s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n--- worker:\n" << worker.output();
  // Two of the eight 80 GB GPUs hold it (65.9 GiB each); the lease gave the program those two.
  EXPECT_EQ(job["placement"]["chosen"]["job_gpus"], 2) << job["placement"]["chosen"].dump(2);
  EXPECT_EQ(job["resources"]["gpus"], 2) << job.dump(2);
  EXPECT_EQ(job["result"].value("visible", ""), "0,1") << job["result"].dump();
  bool leased = false;
  for (const auto& ev : job["events"])
    if (ev["type"] == "leased") {
      leased = true;
      EXPECT_EQ(ev["detail"]["gpus"], json::array({0, 1})) << ev.dump();
    }
  EXPECT_TRUE(leased) << job["events"].dump(2);
  // `jobctl show` states the count it got.
  const auto shown = jobctl_cli(d.url(), {"show", std::to_string(id)});
  ASSERT_TRUE(shown.success()) << shown.out << shown.err;
  EXPECT_NE(shown.out.find("gpu any x2 (gpus auto"), std::string::npos) << shown.out;
  worker.stop(SIGTERM, 30s);
}

TEST(GpuCountFit, QuoteListsTheCountsThatHoldASevenBillionParameterFineTune) {
  jobctl::testing::TempDir tmp;
  CloudSim sim(tmp.file("cloudsim"), " --allow-commands");
  ASSERT_FALSE(sim.url().empty());
  Daemon d(tmp.file("data"), "127.0.0.1:0", 30, {"--config", write_config(tmp, sim.url(), "fit-e2e")});
  ASSERT_FALSE(d.url().empty());
  const json command = {"python3", "finetune.py"};

  const std::string auto_path = tmp.file("auto.json");
  std::ofstream(auto_path) << seven_b_spec("any", "auto", command, "cloud").dump();
  const auto quoted = jobctl_cli(d.url(), {"-o", "json", "quote", auto_path});
  ASSERT_TRUE(quoted.success()) << quoted.describe() << "\n" << quoted.out << quoted.err;
  const json q = json::parse(quoted.out);
  int seen = 0;
  for (const auto& c : q["candidates"]) {
    if (c["option"] != "on_demand" || c.contains("rejection")) continue;
    if (c["instance_type"] == "p5.48xlarge") {  // 2 of its 8 H100 80 GB
      EXPECT_EQ(c["job_gpus"], 2) << c.dump();
      ++seen;
    } else if (c["instance_type"] == "p4d.24xlarge") {  // 4 of its 8 A100 40 GB
      EXPECT_EQ(c["job_gpus"], 4) << c.dump();
      ++seen;
    }
    EXPECT_GT(c["estimated_cost_usd"].get<double>(), 0) << c.dump();
  }
  EXPECT_EQ(seen, 2) << q.dump(1);
  // The table: per option the GPU model, the count it uses, the memory on each and the cost.
  const auto table = jobctl_cli(d.url(), {"quote", auto_path, "--all"});
  ASSERT_TRUE(table.success()) << table.out << table.err;
  for (const char* want : {"H100-SXM x8", "A100-40GB-SXM x8", "65.9", "38.3", "GiB/GPU", "uses", "est. cost",
                           "GiB per GPU with ZeRO-3 on 8 GPUs"})
    EXPECT_NE(table.out.find(want), std::string::npos) << want << "\n" << table.out;

  // A fixed single 24 GB card: nowhere to run, with the figures; and refused at submit.
  const std::string fixed_path = tmp.file("a10g.json");
  std::ofstream(fixed_path) << seven_b_spec("A10G", 1, command, "cloud").dump();
  const auto fixed = jobctl_cli(d.url(), {"quote", fixed_path});
  ASSERT_TRUE(fixed.success()) << fixed.out << fixed.err;
  EXPECT_NE(fixed.out.find("no option fits"), std::string::npos) << fixed.out;
  EXPECT_NE(fixed.out.find("needs 120.89 GiB per GPU"), std::string::npos) << fixed.out;
  const auto refused = jobctl_cli(d.url(), {"submit", fixed_path});
  EXPECT_FALSE(refused.success()) << refused.out;
  EXPECT_NE(refused.err.find("resources.gpus"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("needs 120.89 GiB per GPU with ZeRO-3 on 1 GPU"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("A10G has 22.35 GiB"), std::string::npos) << refused.err;
}

// A fresh jobctld with no worker registered and no cloud: a 13B full fine-tune (no ZeRO) on one
// RTX 4090 is refused at submit (400 on resources.gpus) with the memory it needs per GPU and what
// the GPU has; so is gpus "auto" on that model, with no count up to 8 holding it. The 7B ZeRO-3
// fine-tune that two H100s hold is accepted and waits for a machine.
TEST(GpuCountFit, AJobItsGpuModelCanNeverHoldIsRefusedWithNoWorkerRegistered) {
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  auto thirteen_b = [](const json& gpus) {
    json spec = seven_b_spec("RTX 4090", gpus, {"python3", "finetune.py"}, "auto");
    spec["estimate"]["model"] = {{"layers", 40},     {"hidden", 5120},         {"heads", 40},
                                 {"vocab", 32000},   {"seq_len", 2048},        {"tokens", 1000000000},
                                 {"precision", "bf16"}, {"optimizer", "adamw"}};
    return spec;
  };
  for (const json& gpus : {json(1), json("auto")}) {
    const std::string path = tmp.file("ft13b.json");
    std::ofstream(path) << thirteen_b(gpus).dump();
    const auto refused = jobctl_cli(d.url(), {"submit", path});
    EXPECT_FALSE(refused.success()) << refused.out;
    EXPECT_NE(refused.err.find("resources.gpus"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find(gpus.is_string() ? "fits no count of RTX4090 GPUs up to 8: it needs " : "needs "),
              std::string::npos)
        << refused.err;
    EXPECT_NE(refused.err.find(" GiB per GPU"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("an RTX4090 has 24.00 GiB"), std::string::npos) << refused.err;
  }
  client::ApiClient api(d.url());
  auto list = api.list_jobs(std::nullopt, 10, "");
  ASSERT_TRUE(list) << list.error().message;
  EXPECT_TRUE((*list)["jobs"].empty()) << "a refused job is not stored: " << list->dump();
  const std::string fits = tmp.file("ft7b.json");
  std::ofstream(fits) << seven_b_spec("H100", 2, json{"python3", "finetune.py"}, "auto").dump();
  const auto accepted = jobctl_cli(d.url(), {"submit", fits});
  EXPECT_TRUE(accepted.success()) << accepted.out << accepted.err;
}

}  // namespace
}  // namespace jobctl::e2e
