#include "cli/spec_builder.h"

#include <gtest/gtest.h>

namespace jobctl::cli {
namespace {

using nlohmann::json;

TEST(SpecBuilder, FlagsAloneMakeAnMlpOnFashionMnist) {
  SpecFlags f;
  f.name = "fm";
  f.hidden = "256, 128";
  f.epochs = 1;
  f.batch_size = 64;
  f.lr = 0.002;
  auto s = build_spec(json::object(), f);
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)["name"], "fm");
  EXPECT_EQ((*s)["model"]["kind"], "mlp");
  EXPECT_EQ((*s)["model"]["hidden"], json::array({256, 128}));
  EXPECT_EQ((*s)["data"]["dataset"], "fashion-mnist");
  EXPECT_EQ((*s)["train"]["epochs"], 1);
  EXPECT_EQ((*s)["train"]["batch_size"], 64);
  EXPECT_DOUBLE_EQ((*s)["train"]["lr"].get<double>(), 0.002);
  EXPECT_FALSE(s->contains("resources"));  // only what was given: the daemon fills defaults
}

TEST(SpecBuilder, FlagsOverrideAFileAndKeepTheRest) {
  json base = json::parse(R"({"name":"from-file","model":{"kind":"cnn","channels":[8]},
    "data":{"dataset":"synthetic","samples":100},"train":{"epochs":3,"seed":7}})");
  SpecFlags f;
  f.epochs = 5;
  f.gpu = "A100";
  f.priority = 90;
  auto s = build_spec(base, f);
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)["name"], "from-file");
  EXPECT_EQ((*s)["model"]["kind"], "cnn");
  EXPECT_EQ((*s)["data"]["dataset"], "synthetic");
  EXPECT_EQ((*s)["train"]["epochs"], 5);
  EXPECT_EQ((*s)["train"]["seed"], 7);
  EXPECT_EQ((*s)["resources"]["gpu"], "A100");
  EXPECT_EQ((*s)["priority"], 90);
}

TEST(SpecBuilder, BadListsNameTheFlag) {
  SpecFlags f;
  f.hidden = "256,abc";
  auto s = build_spec(json::object(), f);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().field, "--hidden");
  auto empty = parse_int_list("", "--hidden");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
  EXPECT_FALSE(build_spec(json::array(), SpecFlags{}));
}

}  // namespace
}  // namespace jobctl::cli
