#include "cli/spec_builder.h"

#include <gtest/gtest.h>

#include <cmath>

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

TEST(SpecBuilder, AfterNamesJobsAndArrays) {
  SpecFlags f;
  f.after = {"12", "a14"};
  auto s = build_spec(json::object(), f);
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)["after"], json::parse(R"([12, "a14"])"));
  f.after = {"12", "job-3"};
  auto bad = build_spec(json::object(), f);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "--after");
  EXPECT_EQ(bad.error().message, "--after job-3: a job ID (12) or an array ID (a14)");
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

TEST(SpecBuilder, PlacementEnvSetupAndEstimateFlagsOverrideTheFile) {
  json base = json::parse(R"({"command":["python3","train.py"],"env":{"KEEP":"1","OVER":"file"},
    "setup":["echo from-file"],"estimate":{"hours":3,"gpu":"A100"},
    "placement":{"mode":"cloud","spot":"always","queue_if_unplaceable":true}})");
  SpecFlags f;
  f.mode = "local";
  f.spot = "never";
  f.deadline_hours = 6;
  f.max_usd_per_hour = 2.5;
  f.gpu = "V100";
  f.gpus = 2;
  f.env = {"OVER=flag", "EMPTY=", "EQUALS=a=b"};
  f.setup = {"python3 -m venv --system-site-packages .venv", "true"};
  f.estimate_hours = 0.5;
  auto s = build_spec(base, f);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ((*s)["placement"], json::parse(R"({"mode":"local","spot":"never","deadline_hours":6.0,
    "max_usd_per_hour":2.5,"queue_if_unplaceable":true})"));
  EXPECT_EQ((*s)["resources"], json::parse(R"({"gpu":"V100","gpus":2})"));
  EXPECT_EQ((*s)["env"], json::parse(R"({"KEEP":"1","OVER":"flag","EMPTY":"","EQUALS":"a=b"})"));
  EXPECT_EQ((*s)["setup"], json::array({"python3 -m venv --system-site-packages .venv", "true"}));
  EXPECT_EQ((*s)["estimate"], json::parse(R"({"hours":0.5,"gpu":"A100"})"));
  EXPECT_FALSE(s->contains("model")) << "a command job gets no default model";

  // None of them given: the file's fields as they were.
  auto kept = build_spec(base, SpecFlags{});
  ASSERT_TRUE(kept);
  EXPECT_EQ(*kept, base);
}

TEST(SpecBuilder, ImageFlagsMakeTheImageItsPullAndItsMounts) {
  SpecFlags f;
  f.image = "127.0.0.1:5000/team/train:1";
  f.image_pull = "always";
  f.mounts = {"/data/sets:/data", "/scratch:/scratch:rw", "/ro:/ro:ro"};
  auto s = build_spec(json::parse(R"({"command":["python3","train.py"],"mounts":[{"source":"/old","target":"/old"}]})"), f);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ((*s)["image"], "127.0.0.1:5000/team/train:1");
  EXPECT_EQ((*s)["image_pull"], "always");
  EXPECT_EQ((*s)["mounts"], json::parse(R"([{"source":"/data/sets","target":"/data"},
    {"source":"/scratch","target":"/scratch","writable":true},{"source":"/ro","target":"/ro"}])"))
      << "--mount replaces the file's list";

  auto field_of = [](const SpecFlags& flags) {
    auto built = build_spec(json::parse(R"({"command":["x"]})"), flags);
    return built ? std::string("(accepted)") : built.error().field;
  };
  for (const char* bad : {"/only-source", ":/target", "/a:", "/a:/b:rx", "/a:/b:rw:x"}) {
    f = {};
    f.mounts = {bad};
    EXPECT_EQ(field_of(f), "--mount") << bad;
  }
  f = {};
  f.image_pull = "sometimes";
  EXPECT_EQ(field_of(f), "--image-pull");
}

TEST(SpecBuilder, BadPlacementEnvSetupAndEstimateFlagsNameTheFlag) {
  auto field_of = [](const SpecFlags& f) {
    auto s = build_spec(json::parse(R"({"command":["x"]})"), f);
    return s ? std::string("(accepted)") : s.error().field;
  };
  SpecFlags f;
  f.mode = "moon";
  EXPECT_EQ(field_of(f), "--mode");
  f = {};
  f.spot = "sometimes";
  EXPECT_EQ(field_of(f), "--spot");
  for (double bad : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
    f = {};
    f.deadline_hours = bad;
    EXPECT_EQ(field_of(f), "--deadline-hours") << bad;
    f = {};
    f.max_usd_per_hour = bad;
    EXPECT_EQ(field_of(f), "--max-usd-per-hour") << bad;
    f = {};
    f.estimate_hours = bad;
    EXPECT_EQ(field_of(f), "--estimate-hours") << bad;
  }
  for (const char* bad : {"NOEQUALS", "=value"}) {
    f = {};
    f.env = {bad};
    EXPECT_EQ(field_of(f), "--env") << bad;
  }
  f = {};
  f.setup = {"true", ""};
  EXPECT_EQ(field_of(f), "--setup");
  f = {};
  f.gpus = 0;
  EXPECT_EQ(field_of(f), "--gpus");
  f = {};
  f.nodes = 0;
  EXPECT_EQ(field_of(f), "--nodes");
  f = {};
  f.nodes = 2;
  auto gang = build_spec(json::parse(R"({"command":["x"]})"), f);
  ASSERT_TRUE(gang) << gang.error().message;
  EXPECT_EQ((*gang)["resources"]["nodes"], 2);
  f = {};
  f.spot = "never";
  auto s = build_spec(json::parse(R"({"command":["x"]})"), f);
  ASSERT_FALSE(!s);
  EXPECT_NE(s->dump().find("never"), std::string::npos);
  f.mode = "moon";
  auto message = build_spec(json::object(), f);
  ASSERT_FALSE(message);
  EXPECT_EQ(message.error().message, "--mode must be one of auto, local, cloud (got 'moon')");
}

}  // namespace
}  // namespace jobctl::cli
