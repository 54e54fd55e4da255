// The exec driver with real shell commands: a tiny "cloud" kept as files in a temporary folder
// (launch creates <dir>/<id>.json, terminate rewrites it as terminated, describe prints them),
// plus the command templates and the instance JSON it relies on.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "cloud/command_template.h"
#include "cloud/exec_provider.h"
#include "cloud/instance_json.h"
#include "process/run.h"
#include "tests/support/temp_dir.h"

namespace {

using namespace jobctl::cloud;
using nlohmann::json;

TEST(CommandTemplate, QuotesValuesSoTheyStayOneArgument) {
  auto c = expand_command("echo {a} {b}", {{"a", "it's"}, {"b", "x; rm -rf /"}}, "f");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(*c, "echo 'it'\\''s' 'x; rm -rf /'");
  auto r = jobctl::process::run(jobctl::process::shell_argv("printf '%s|' " + *c),
                                {.timeout = std::chrono::seconds(5)});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->out, "echo|it's|x; rm -rf /|");
}

TEST(CommandTemplate, RawValuesLiteralBracesAndErrors) {
  auto c = expand_command("w{flag} {{x}}", {}, "f", {{"flag", " --spot"}});
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, "w --spot {x}");
  auto bad = expand_command("run {instnce_type}", {{"instance_type", "p3"}}, "cloud.exec.launch");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "cloud.exec.launch");
  EXPECT_NE(bad.error().message.find("{instnce_type}"), std::string::npos);
  auto literal = expand_command(R"(q '{"id":{id}}' '{x:Y}')", {{"id", "i-1"}}, "f");
  ASSERT_TRUE(literal);
  EXPECT_EQ(*literal, R"(q '{"id":'i-1'}' '{x:Y}')");
  EXPECT_TRUE(has_placeholders("x {id} y"));
  EXPECT_FALSE(has_placeholders("x {{id}} y"));
  EXPECT_FALSE(has_placeholders("sleep 5"));
}

TEST(InstanceJson, ReadsEc2StyleFieldsAndRefusesAMissingId) {
  auto i = instance_from_json(json{{"id", "i-1"}, {"state", "running"}, {"spot", "spot"}}, "x");
  ASSERT_TRUE(i);
  EXPECT_TRUE(i->spot);
  auto od = instance_from_json(json{{"id", "i-2"}, {"spot", nullptr}}, "x");
  ASSERT_TRUE(od);
  EXPECT_FALSE(od->spot);
  auto no_id = instance_from_json(json{{"state", "running"}}, "out");
  ASSERT_FALSE(no_id);
  EXPECT_EQ(no_id.error().field, "out.id");
  EXPECT_EQ(rfc3339_utc(0), "1970-01-01T00:00:00Z");
}

// The times billing runs between, as the cloud reports them: milliseconds (cloudsim) or RFC 3339
// text (EC2's LaunchTime); anything else names the field.
TEST(InstanceJson, ReadsTheCloudsLaunchAndEndTimes) {
  auto i = instance_from_json(json{{"id", "i-1"}, {"launched_ms", 1000}, {"ended_ms", 62'500}}, "x");
  ASSERT_TRUE(i) << i.error().message;
  EXPECT_EQ(i->launched_ms, 1000);
  EXPECT_EQ(i->ended_ms, 62'500);
  auto aws = instance_from_json(json{{"id", "i-2"}, {"launched_ms", "2026-11-27T02:40:10+00:00"},
                                     {"ended_ms", "2026-11-27T02:41:11.250Z"}},
                                "x");
  ASSERT_TRUE(aws) << aws.error().message;
  EXPECT_EQ(aws->ended_ms.value() - aws->launched_ms, 61'250);
  auto none = instance_from_json(json{{"id", "i-3"}}, "x");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->ended_ms.has_value());
  EXPECT_EQ(to_json(*aws)["ended_ms"], *aws->ended_ms);
  auto bad = instance_from_json(json{{"id", "i-4"}, {"ended_ms", "yesterday"}}, "out");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "out.ended_ms");
}

// The zone an offer was priced in reaches the launch command ({zone}), beside its region.
TEST(ExecProviderLaunch, TheZoneTravelsToTheLaunchCommand) {
  ExecProviderOptions o;
  o.launch = "launch {instance_type} {region} {zone} {usd_per_hour}";
  o.terminate = "true";
  o.describe = "echo []";
  ExecProvider p(o);
  LaunchRequest req;
  req.offer.instance_type = "p3.2xlarge";
  req.offer.region = "us-east-2";
  req.offer.zone = "use2-az2";
  req.offer.on_demand_usd_per_hour = 3.06;
  req.offer.spot_usd_per_hour = 0.3635;
  req.spot = true;
  auto cmd = p.launch_command(req);
  ASSERT_TRUE(cmd) << cmd.error().message;
  EXPECT_EQ(*cmd, "launch 'p3.2xlarge' 'us-east-2' 'use2-az2' '0.3635'");
}

class ExecProviderTest : public ::testing::Test {
 protected:
  ExecProviderOptions options() {
    const std::string d = shell_quote(dir.path().string());
    ExecProviderOptions o;
    // The "cloud": one JSON file per instance. The launch script records its arguments.
    o.launch = "id=i-$(date +%s%N); printf '%s\\n' {worker_command} > " + d + "/$id.cmd; "
               "printf '{\"id\":\"%s\",\"state\":\"pending\",\"spot\":%s,\"instance_type\":%s}' "
               "\"$id\" {spot} '\"'{instance_type}'\"' | tee " + d + "/$id.json";
    o.terminate = "f=" + d + "/{instance_id}.json; test -f \"$f\" && "
                  "sed -i 's/\"state\":\"[a-z-]*\"/\"state\":\"terminated\"/' \"$f\"; true";
    o.describe = "printf '['; first=1; for f in " + d + "/i-*.json; do [ -f \"$f\" ] || continue; "
                 "[ $first = 1 ] || printf ','; first=0; cat \"$f\"; done; printf ']'";
    o.timeout_s = 10;
    return o;
  }
  jobctl::testing::TempDir dir;
};

TEST_F(ExecProviderTest, LaunchDescribeTerminate) {
  ExecProviderOptions o = options();
  ASSERT_TRUE(ExecProvider::validate(o)) << ExecProvider::validate(o).error().message;
  ExecProvider p(o);
  LaunchRequest req;
  req.offer.cloud = "aws";
  req.offer.instance_type = "p3.2xlarge";
  req.offer.region = "us-east-1";
  req.offer.on_demand_usd_per_hour = 3.06;
  req.offer.spot_usd_per_hour = 0.92;
  req.spot = true;
  req.server_url = "http://10.0.0.1:8080";
  req.tag = "jobctl";
  auto inst = p.launch(req);
  ASSERT_TRUE(inst) << inst.error().message;
  EXPECT_EQ(inst->instance_type, "p3.2xlarge");
  EXPECT_TRUE(inst->spot);
  EXPECT_EQ(inst->state, "pending");
  EXPECT_DOUBLE_EQ(inst->usd_per_hour, 0.92);  // filled from the offer
  // The worker command the instance would run: the daemon's URL and the spot flag.
  std::ifstream cmd(dir.file(inst->id + ".cmd"));
  std::string line;
  std::getline(cmd, line);
  EXPECT_EQ(line, "jobctl-worker --server 'http://10.0.0.1:8080' --instance-type 'p3.2xlarge' --spot");

  auto all = p.describe("jobctl");
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].id, inst->id);
  ASSERT_TRUE(p.terminate(inst->id));
  all = p.describe("jobctl");
  ASSERT_TRUE(all);
  EXPECT_TRUE((*all)[0].terminated());
  auto feed = p.interruptions("jobctl", 0);  // derived from describe: no notices here
  ASSERT_TRUE(feed);
  EXPECT_TRUE(feed->empty());
}

TEST_F(ExecProviderTest, FailuresNameTheKeyAndTheCommandsWords) {
  ExecProviderOptions o = options();
  o.launch = "echo 'InsufficientInstanceCapacity: no p3 in us-east-1a' >&2; exit 254";
  ExecProvider p(o);
  LaunchRequest req;
  req.offer.instance_type = "p3.2xlarge";
  auto r = p.launch(req);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "cloud.exec.launch");
  EXPECT_NE(r.error().message.find("InsufficientInstanceCapacity"), std::string::npos) << r.error().message;

  o.launch = "echo not json";
  auto r2 = ExecProvider(o).launch(req);
  ASSERT_FALSE(r2);
  EXPECT_NE(r2.error().message.find("no valid JSON"), std::string::npos);

  o.launch = "echo '{\"state\":\"running\"}'";
  auto r3 = ExecProvider(o).launch(req);
  ASSERT_FALSE(r3);
  EXPECT_NE(r3.error().field.find(".id"), std::string::npos);

  ExecProviderOptions missing = options();
  missing.describe.clear();
  auto v = ExecProvider::validate(missing);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().field, "cloud.exec.describe");
  ExecProviderOptions typo = options();
  typo.terminate = "kill {instance}";
  auto v2 = ExecProvider::validate(typo);
  ASSERT_FALSE(v2);
  EXPECT_EQ(v2.error().field, "cloud.exec.terminate");
}

TEST_F(ExecProviderTest, InterruptionCommandFeed) {
  ExecProviderOptions o = options();
  o.interruptions = "echo '[{\"instance_id\":\"i-9\",\"notice_ms\":'{since_ms}'5,\"action_ms\":9}]'";
  ExecProvider p(o);
  auto feed = p.interruptions("jobctl", 100);
  ASSERT_TRUE(feed) << feed.error().message;
  ASSERT_EQ(feed->size(), 1u);
  EXPECT_EQ((*feed)[0].instance_id, "i-9");
  EXPECT_EQ((*feed)[0].notice_ms, 1005);
}

}  // namespace
