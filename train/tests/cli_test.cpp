// jobctl-train's command line (docs/train-cli.md).
#include <gtest/gtest.h>

#include "train/app/cli_options.h"

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

}  // namespace
}  // namespace jobctl::train
