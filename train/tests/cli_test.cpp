// jobctl-train's command line (docs/train-cli.md).
#include <gtest/gtest.h>

#include "train/app/cli_options.h"
#include "train/app/memory_check.h"

namespace jobctl::train {
namespace {

TEST(Cli, ParsesEveryFlag) {
  auto o = parse_cli({"--spec", "s.json", "--out", "d", "--resume", "auto", "--device=cpu", "--data-dir", "/x",
                      "--threads", "2", "--log-every", "10", "--max-steps", "500"});
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->spec_path, "s.json");
  EXPECT_EQ(o->out_dir, "d");
  EXPECT_EQ(o->resume, "auto");
  EXPECT_EQ(o->device, "cpu");
  EXPECT_EQ(o->data_dir, "/x");
  EXPECT_EQ(o->threads, 2);
  EXPECT_EQ(o->log_every, 10);
  EXPECT_EQ(o->max_steps, 500);
}

TEST(Cli, DefaultsAndHelp) {
  auto o = parse_cli({"--spec", "s", "--out", "o"});
  ASSERT_TRUE(o);
  EXPECT_EQ(o->device, "auto");
  EXPECT_EQ(o->log_every, 1);
  EXPECT_EQ(o->max_steps, 0);
  EXPECT_TRUE(o->resume.empty());
  auto h = parse_cli({"--help"});
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->help);
}

// --measure-cpu trains nothing: no spec or folder is needed, and it takes no value.
TEST(Cli, MeasureCpuNeedsNoSpec) {
  auto m = parse_cli({"--measure-cpu"});
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->measure_cpu);
  auto valued = parse_cli({"--measure-cpu=yes"});
  ASSERT_FALSE(valued);
  EXPECT_EQ(valued.error().field, "--measure-cpu");
}

TEST(Cli, ErrorsNameTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--out", "o"}, "--spec"},
      {{"--spec", "s"}, "--out"},
      {{"--spec", "s", "--out", "o", "--device", "tpu"}, "--device"},
      {{"--spec", "s", "--out", "o", "--threads", "0"}, "--threads"},
      {{"--spec", "s", "--out", "o", "--threads", "2x"}, "--threads"},
      {{"--spec", "s", "--out", "o", "--max-steps", "-1"}, "--max-steps"},
      {{"--spec", "s", "--out", "o", "--log-every"}, "--log-every"},
      {{"--spec", "s", "--out", "o", "--frobnicate", "1"}, "--frobnicate"},
  };
  for (const auto& [args, flag] : bad) {
    auto r = parse_cli(args);
    ASSERT_FALSE(r) << flag;
    EXPECT_EQ(r.error().code, ErrorCode::usage);
    EXPECT_EQ(r.error().field, flag);
    EXPECT_NE(r.error().message.find(flag), std::string::npos) << r.error().message;
  }
}

// The memory a run needs, against what the machine has (before anything large is allocated).
TEST(MemoryCheck, NeedAgainstAvailable) {
  auto spec = parse_job_spec(R"({"model": {"kind": "mlp", "hidden": [256]},
                                  "data": {"dataset": "synthetic", "samples": 1000, "test_samples": 100,
                                           "features": 64, "classes": 10},
                                  "train": {"batch_size": 32}})");
  ASSERT_TRUE(spec) << spec.error().message;
  const ModelStats stats = model_stats(*spec);
  const HostMemoryNeed cpu = host_memory_need(*spec, stats, true);
  EXPECT_EQ(cpu.data_bytes, 1100 * (64 * 4 + 4));
  EXPECT_EQ(cpu.model_bytes, stats.training_bytes(32));
  EXPECT_EQ(cpu.snapshot_bytes, stats.weight_bytes + stats.optimizer_state_bytes);
  EXPECT_GE(cpu.fixed_bytes, 256LL << 20);
  EXPECT_EQ(host_memory_need(*spec, stats, false).model_bytes, 0);  // on a GPU
  EXPECT_TRUE(check_host_memory(cpu, cpu.total()));
  EXPECT_TRUE(check_host_memory(cpu, std::nullopt));  // nothing known: no refusal
  auto refused = check_host_memory(cpu, cpu.total() - 1);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().field, "memory");
  EXPECT_NE(refused.error().message.find("not enough memory"), std::string::npos) << refused.error().message;
  EXPECT_EQ(mem_available_bytes("MemTotal:       32768000 kB\nMemFree: 1 kB\nMemAvailable:   23770068 kB\n"),
            int64_t{23770068} * 1024);
  EXPECT_FALSE(mem_available_bytes("MemTotal: 1 kB\n"));
  EXPECT_TRUE(available_host_memory().has_value());  // Linux: /proc/meminfo
}

}  // namespace
}  // namespace jobctl::train
