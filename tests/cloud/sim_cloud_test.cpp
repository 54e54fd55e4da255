// The simulated cloud without sockets, on a ManualClock: per-second billing at catalog prices
// scaled by the time factor, notices and reclaims (the instance's real process is killed), rate
// interruptions, trace replay, and state that survives a restart. Instances run a real command
// (`sleep`) in place of jobctl-worker.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "cloud/instance_json.h"

#include "cloud/sim/sim_cloud.h"
#include "cost/price_catalog.h"
#include "tests/support/shared_data.h"
#include "tests/support/temp_dir.h"

namespace {

using namespace jobctl::cloud::sim;
using jobctl::ManualClock;
using nlohmann::json;

SimCloudOptions base_options(const std::string& dir) {
  SimCloudOptions o;
  o.offers = jobctl::cost::seed_catalog();
  o.state_dir = dir;
  o.worker_command = "sleep 600 # {instance_id} {notice_url}";
  o.default_server = "http://127.0.0.1:1";
  o.base_url = "http://127.0.0.1:2";
  o.time_factor = 60;        // one real second is a simulated minute
  o.notice_seconds = 120;    // two real seconds
  return o;
}

bool alive(const json& inst) { return inst["pid"].is_number() && ::kill(inst["pid"].get<int>(), 0) == 0; }

TEST(SimCloud, BillsSimulatedSecondsAtCatalogPrices) {
  jobctl::testing::TempDir dir;
  ManualClock clock;
  auto c = SimCloud::create(base_options(dir.path().string()), clock);
  ASSERT_TRUE(c) << c.error().message;
  auto od = (*c)->launch({"p3.2xlarge", "", "", false, "", "t", "job-1"});
  ASSERT_TRUE(od) << od.error().message;
  auto spot = (*c)->launch({"p3.2xlarge", "", "", true, "", "t", "job-2"});
  ASSERT_TRUE(spot);
  EXPECT_DOUBLE_EQ((*od)["usd_per_hour"].get<double>(), 3.06);
  EXPECT_DOUBLE_EQ((*spot)["usd_per_hour"].get<double>(), 0.5197);
  EXPECT_TRUE(alive(*od));
  clock.advance_ms(30'000);  // 30 real s = 1800 simulated s = half an hour
  json bill = (*c)->billing();
  EXPECT_EQ(bill["billed_seconds"].get<int64_t>(), 3600);
  EXPECT_NEAR(bill["total_usd"].get<double>(), 0.5 * 3.06 + 0.5 * 0.5197, 1e-9);
  auto t = (*c)->terminate((*od)["id"]);
  ASSERT_TRUE(t);
  clock.advance_ms(30'000);  // terminated: no more billing for it
  bill = (*c)->billing();
  EXPECT_EQ(bill["instances"][0]["billed_seconds"].get<int64_t>(), 1800);
  EXPECT_EQ(bill["instances"][1]["billed_seconds"].get<int64_t>(), 3600);
}

TEST(SimCloud, NoticeThenReclaimKillsTheInstance) {
  jobctl::testing::TempDir dir;
  ManualClock clock;
  auto c = SimCloud::create(base_options(dir.path().string()), clock);
  ASSERT_TRUE(c);
  auto inst = (*c)->launch({"g5.xlarge", "", "", true, "", "t", ""});
  ASSERT_TRUE(inst);
  const std::string id = (*inst)["id"];
  auto action = (*c)->instance_action(id);
  ASSERT_TRUE(action);
  EXPECT_FALSE(*action);  // 404 until a notice
  ASSERT_TRUE((*c)->interrupt(id));
  action = (*c)->instance_action(id);
  ASSERT_TRUE(action && *action);
  EXPECT_EQ((**action)["action"], "terminate");
  EXPECT_EQ((**action)["time"], jobctl::cloud::rfc3339_utc(clock.now_ms() + 2000));
  json feed = (*c)->interruptions("t", 0);
  ASSERT_EQ(feed["interruptions"].size(), 1u);
  EXPECT_EQ(feed["interruptions"][0]["action_ms"].get<int64_t>() -
                feed["interruptions"][0]["notice_ms"].get<int64_t>(), 2000);
  clock.advance_ms(1999);
  (*c)->tick();
  auto d = (*c)->describe(id);
  EXPECT_EQ((*d)["state"], "running");
  EXPECT_TRUE(alive(*d));
  const int pid = (*d)["pid"];
  clock.advance_ms(1);
  (*c)->tick();
  d = (*c)->describe(id);
  EXPECT_EQ((*d)["state"], "terminated");
  EXPECT_EQ((*d)["reason"], "spot-interruption");
  EXPECT_NE(::kill(pid, 0), 0);  // reaped: gone
  EXPECT_EQ((*d)["worker"], "killed by signal 9 (Killed)");
  EXPECT_FALSE((*c)->interrupt(id));  // a terminated instance cannot be interrupted
  EXPECT_EQ((*c)->interrupt("i-nope").error().code, jobctl::ErrorCode::not_found);
}

TEST(SimCloud, RefusesWhatTheCatalogDoesNotOffer) {
  jobctl::testing::TempDir dir;
  ManualClock clock;
  auto c = SimCloud::create(base_options(dir.path().string()), clock);
  ASSERT_TRUE(c);
  auto r = (*c)->launch({"x9.huge", "", "", false, "", "", ""});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "instance_type");
  r = (*c)->launch({"gpu_1x_a100", "", "", true, "", "", ""});  // Lambda: no spot market
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "spot");
  r = (*c)->launch({"p3.2xlarge", "eu-west-9", "", false, "", "", ""});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "region");
  EXPECT_EQ((*c)->list("")["instances"].size(), 0u);
}

TEST(SimCloud, LaunchesInTheZoneAskedForAtThatZonesPrice) {
  jobctl::testing::TempDir dir;
  ManualClock clock;
  SimCloudOptions o = base_options(dir.path().string());
  // The same type in a second zone of the region, its spot market cheaper than the first's.
  for (const auto& offer : jobctl::cost::seed_catalog())
    if (offer.instance_type == "p3.2xlarge") {
      jobctl::cost::Offer second = offer;
      second.zone = "use1-az2";
      second.spot_usd_per_hour = 0.40;
      o.offers.push_back(second);
    }
  auto c = SimCloud::create(std::move(o), clock);
  ASSERT_TRUE(c) << c.error().message;
  SimLaunch asked{"p3.2xlarge", "us-east-1", "use1-az2", true, "", "t", "job-1"};
  auto in_zone = (*c)->launch(asked);
  ASSERT_TRUE(in_zone) << in_zone.error().message;
  EXPECT_EQ((*in_zone)["zone"], "use1-az2");
  EXPECT_DOUBLE_EQ((*in_zone)["usd_per_hour"].get<double>(), 0.40);
  // No zone: the region's first offer.
  auto first = (*c)->launch({"p3.2xlarge", "us-east-1", "", true, "", "t", "job-2"});
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ((*first)["zone"], "use1-az1");
  EXPECT_DOUBLE_EQ((*first)["usd_per_hour"].get<double>(), 0.5197);
  // A zone the catalog does not offer the type in is refused, naming the field.
  asked.zone = "use1-az9";
  auto nowhere = (*c)->launch(asked);
  ASSERT_FALSE(nowhere);
  EXPECT_EQ(nowhere.error().field, "zone");
}

// An instance launched for one command job starts its worker for that job alone, command jobs
// allowed ({job_flags}); any other instance's worker gets neither flag.
TEST(SimCloud, AnInstanceForACommandJobStartsItsWorkerForThatJob) {
  jobctl::testing::TempDir dir;
  ManualClock clock;
  SimCloudOptions o = base_options(dir.path().string());
  o.worker_command = "sleep 600 # {instance_id}{job_flags}";
  auto c = SimCloud::create(std::move(o), clock);
  ASSERT_TRUE(c) << c.error().message;
  SimLaunch dedicated{"p3.2xlarge", "us-east-1", "", true, "", "t", "job-7"};
  dedicated.for_job = 7;
  auto one = (*c)->launch(dedicated);
  ASSERT_TRUE(one) << one.error().message;
  auto shared = (*c)->launch({"p3.2xlarge", "us-east-1", "", true, "", "t", "job-8"});
  ASSERT_TRUE(shared) << shared.error().message;
  auto command_of = [&](const json& inst) {
    std::ifstream log(dir.path() / "instances" / inst["id"].get<std::string>() / "worker.log");
    std::string first;
    std::getline(log, first);
    return first;
  };
  const std::string id = (*one)["id"].get<std::string>();
  EXPECT_EQ(command_of(*one), "cloudsim: sleep 600 # '" + id + "' --for-job 7 --allow-commands");
  EXPECT_EQ(command_of(*shared), "cloudsim: sleep 600 # '" + (*shared)["id"].get<std::string>() + "'");
}

TEST(SimCloud, RateInterruptionsFollowTheSeed) {
  auto schedule = [](uint64_t seed) {
    jobctl::testing::TempDir dir;
    ManualClock clock;
    SimCloudOptions o = base_options(dir.path().string());
    o.interruption_rate_per_hour = 6;  // mean 10 simulated minutes = 10 real seconds
    o.seed = seed;
    auto c = SimCloud::create(o, clock);
    EXPECT_TRUE(c);
    auto inst = (*c)->launch({"p3.2xlarge", "", "", true, "", "", ""});
    EXPECT_TRUE(inst);
    int64_t waited = 0;
    while (waited < 3'600'000) {
      clock.advance_ms(100);
      waited += 100;
      (*c)->tick();
      if ((*c)->describe((*inst)["id"]).value()["notice_ms"].is_number()) break;
    }
    return waited;
  };
  const int64_t a = schedule(7), b = schedule(7), other = schedule(8);
  EXPECT_EQ(a, b);
  EXPECT_LT(a, 3'600'000);
  EXPECT_NE(a, other);
}

TEST(SimCloud, TraceReplayRefusesAndInterruptsSpotWhenTheTraceHasNone) {
  jobctl::testing::TempDir dir;
  ManualClock clock;
  SimCloudOptions o = base_options(dir.path().string());
  // 600 s ticks; at F = 600 each tick is one real second: available, available, gone, back.
  auto trace = jobctl::scheduler::parse_spot_trace(R"({"metadata":{"gap_seconds":600},"data":[1,1,0,1]})");
  ASSERT_TRUE(trace);
  o.trace = *trace;
  o.time_factor = 600;
  auto c = SimCloud::create(o, clock);
  ASSERT_TRUE(c);
  auto inst = (*c)->launch({"p3.2xlarge", "", "", true, "", "", ""});
  ASSERT_TRUE(inst);
  auto od = (*c)->launch({"p3.2xlarge", "", "", false, "", "", ""});
  ASSERT_TRUE(od);
  clock.advance_ms(1500);
  (*c)->tick();
  EXPECT_TRUE((*c)->describe((*inst)["id"]).value()["notice_ms"].is_null());
  clock.advance_ms(600);  // tick 2: no spot
  (*c)->tick();
  EXPECT_FALSE((*c)->spot_capacity_now());
  auto d = (*c)->describe((*inst)["id"]).value();
  EXPECT_TRUE(d["notice_ms"].is_number());
  EXPECT_EQ(d["reason"], "spot-interruption (trace)");
  EXPECT_TRUE((*c)->describe((*od)["id"]).value()["notice_ms"].is_null());  // on demand: untouched
  auto refused = (*c)->launch({"p3.2xlarge", "", "", true, "", "", ""});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, jobctl::ErrorCode::unavailable);
  clock.advance_ms(1000);  // tick 3: back
  (*c)->tick();
  EXPECT_TRUE((*c)->spot_capacity_now());
  EXPECT_EQ((*c)->describe((*inst)["id"]).value()["state"], "terminated");
}

TEST(SimCloud, RealTraceFromSharedData) {
  const char* relative = "spot-traces/preemption/1-node/aws-04-22-2023/us-west-2b_v100_1.json";
  JOBCTL_NEED_SHARED_DATA(relative);
  std::ifstream in(jobctl::testing::shared_data(relative));
  std::string text;
  for (std::string line; std::getline(in, line);) text += line;
  auto trace = jobctl::scheduler::parse_spot_trace(text);
  ASSERT_TRUE(trace) << trace.error().message;
  // The first preemption (available -> unavailable); start one tick before it.
  size_t zero = 1;
  while (zero < trace->available.size() && !(trace->available[zero - 1] > 0 && trace->available[zero] == 0)) ++zero;
  ASSERT_LT(zero, trace->available.size()) << "the trace never preempts";
  jobctl::testing::TempDir dir;
  ManualClock clock;
  SimCloudOptions o = base_options(dir.path().string());
  o.trace = *trace;
  o.trace_start_tick = static_cast<int64_t>(zero) - 1;
  o.time_factor = trace->gap_seconds;  // one tick per real second
  auto c = SimCloud::create(o, clock);
  ASSERT_TRUE(c);
  auto inst = (*c)->launch({"p3.2xlarge", "", "", true, "", "", ""});
  ASSERT_TRUE(inst);
  clock.advance_ms(1000);
  (*c)->tick();
  EXPECT_TRUE((*c)->describe((*inst)["id"]).value()["notice_ms"].is_number());
}

TEST(SimCloud, StateSurvivesARestart) {
  jobctl::testing::TempDir dir;
  ManualClock clock;
  std::string id;
  {
    auto c = SimCloud::create(base_options(dir.path().string()), clock);
    ASSERT_TRUE(c);
    auto inst = (*c)->launch({"p3.2xlarge", "", "", false, "", "t", ""});
    ASSERT_TRUE(inst);
    id = (*inst)["id"];
    clock.advance_ms(10'000);
    (*c)->tick();
  }  // stopping cloudsim ends every instance
  auto again = SimCloud::create(base_options(dir.path().string()), clock);
  ASSERT_TRUE(again) << again.error().message;
  auto d = (*again)->describe(id);
  ASSERT_TRUE(d);
  EXPECT_EQ((*d)["state"], "terminated");
  EXPECT_EQ((*d)["billed_seconds"].get<int64_t>(), 600);
}

}  // namespace
