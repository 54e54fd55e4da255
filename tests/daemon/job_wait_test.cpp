// Why a job waits (daemon/jobs/job_wait.h): the reason a placement document's rejections sum up
// to, the queue a waiting job is in, and its expected start.
#include "daemon/jobs/job_wait.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace jobctl::daemon::jobs {
namespace {

using nlohmann::json;

json rejected(const std::string& option, const std::string& label, const std::string& kind, const std::string& why,
              json extra = json::object()) {
  json row = {{"option", option}, {"label", label}, {"rejection", kind}, {"rejected", why}};
  row.update(extra);
  return row;
}

TEST(JobWait, ACommandJobWhereNoWorkerRunsCommandsSaysHowToStartOne) {
  const json doc = {{"outcome", "unplaceable"},
                    {"reason", "no option can run this job: 2 no_provider, 1 no_commands"},
                    {"candidates",
                     {rejected("local", "local cpu x1", "no_commands", "a command job, and no worker here runs them"),
                      rejected("on_demand", "on-demand aws:c5", "no_provider", "no cloud provider is configured to launch it"),
                      rejected("spot", "spot aws:c5", "no_provider", "no cloud provider is configured to launch it")}}};
  const std::string s = unplaceable_summary(doc);
  EXPECT_NE(s.find("no worker can run commands"), std::string::npos) << s;
  EXPECT_NE(s.find("jobctl-worker --allow-commands"), std::string::npos) << s;
  EXPECT_NE(s.find("1 of 3 options"), std::string::npos) << s;
}

TEST(JobWait, MemoryNamesTheNeedAndTheLargestGpu) {
  const json doc = {{"outcome", "unplaceable"},
                    {"candidates",
                     {rejected("local", "local T4 x1", "memory", "needs 38.00 GiB per GPU; has 16.0",
                               {{"memory_gib_per_gpu", 38.0}, {"gpu_memory_gib", 16.0}}),
                      rejected("on_demand", "on-demand aws:g5", "memory", "needs 38.00 GiB per GPU; has 24.0",
                               {{"memory_gib_per_gpu", 38.0}, {"gpu_memory_gib", 24.0}}),
                      rejected("spot", "spot aws:g5", "spot_mode", "spot is never")}}};
  const std::string s = unplaceable_summary(doc);
  EXPECT_NE(s.find("needs 38.00 GiB per GPU, the largest has 24.0"), std::string::npos) << s;
  EXPECT_NE(s.find("2 of 3 options"), std::string::npos) << s;
}

TEST(JobWait, TooFewGpusAndNoCandidatesAtAll) {
  const json doc = {{"outcome", "unplaceable"},
                    {"candidates",
                     {rejected("local", "local V100 x4", "too_few_gpus", "needs 8 GPUs; has 4", {{"gpus", 4}, {"job_gpus", 8}}),
                      rejected("local", "local A100 x2", "too_few_gpus", "needs 8 GPUs; has 2", {{"gpus", 2}, {"job_gpus", 8}})}}};
  EXPECT_NE(unplaceable_summary(doc).find("needs 8 GPUs on one machine, the most any option has is 4"), std::string::npos)
      << unplaceable_summary(doc);
  const json none = {{"outcome", "unplaceable"}, {"candidates", json::array()}};
  EXPECT_NE(unplaceable_summary(none).find("no worker is registered"), std::string::npos) << unplaceable_summary(none);
}

TEST(JobWait, HeldAndQueuedReasons) {
  store::JobRow held;
  held.state = store::JobState::held;
  EXPECT_EQ(wait_reason(held, nullptr, "monthly budget of user a exceeded"), "held: monthly budget of user a exceeded");
  EXPECT_FALSE(expected_start(held, nullptr, 0, 1000).at_ms);

  store::JobRow queued;
  const json spot = {{"outcome", "wait_spot"}, {"reason", "waiting for spot capacity: ..."}, {"chosen", nullptr}};
  EXPECT_EQ(wait_reason(queued, &spot, ""), "waiting for spot capacity: ...");
  EXPECT_FALSE(expected_start(queued, &spot, 1, 1000).at_ms);

  store::JobRow running;
  running.state = store::JobState::running;
  running.worker_id = 3;
  EXPECT_FALSE(is_waiting(running));
  EXPECT_TRUE(is_waiting(queued));
  EXPECT_TRUE(is_waiting(held));
}

TEST(JobWait, APlacedJobStartsWhenItsDecisionExpectedTheOptionFree) {
  store::JobRow job;
  job.state = store::JobState::placed;
  job.updated_ms = 5'000;
  store::PlacementChoice chosen;
  chosen.option = scheduler::OptionKind::local;
  chosen.gpu = "V100";
  chosen.queue_wait_hours = 0.5;
  job.chosen = chosen;
  const json doc = {{"outcome", "wait_local"}, {"decided_ms", 10'000}, {"chosen", {{"label", "local V100 x1"}}}};
  const ExpectedStart at = expected_start(job, &doc, 1, 20'000);
  ASSERT_TRUE(at.at_ms);
  EXPECT_EQ(*at.at_ms, 10'000 + 1'800'000);
  EXPECT_NE(at.basis.find("running jobs' estimated remaining time"), std::string::npos) << at.basis;
  // Past it (a job overran its estimate): now, and it says so.
  const ExpectedStart late = expected_start(job, &doc, 1, 9'000'000);
  EXPECT_EQ(*late.at_ms, 9'000'000);
  EXPECT_NE(late.basis.find("overdue"), std::string::npos) << late.basis;
  const std::string reason = wait_reason(job, &doc, "");
  EXPECT_NE(reason.find("placed on local V100 x1"), std::string::npos) << reason;
  EXPECT_NE(reason.find("expected free 30 min after the decision"), std::string::npos) << reason;
}

TEST(JobWait, QueuesAreNamedByWhatTheirJobsWant) {
  store::QueuedJobRow unplaced;
  unplaced.resource_gpu = "any";
  unplaced.command = true;
  EXPECT_EQ(wanted_resources(unplaced), "unplaced: any x1, command");
  store::QueuedJobRow local = unplaced;
  local.placement_option = scheduler::OptionKind::local;
  local.placement_gpu = "V100";
  EXPECT_EQ(wanted_resources(local), "local V100 x1");
  store::QueuedJobRow cloud = unplaced;
  cloud.placement_option = scheduler::OptionKind::spot;
  cloud.placement_instance_type = "p3.2xlarge";
  EXPECT_EQ(wanted_resources(cloud), "spot p3.2xlarge x1");
}

// Places count in offer order (priority, then age) within each queue, not across queues.
TEST(JobWait, PlacesAreCountedInOfferOrderPerQueue) {
  JobQueue queue;
  auto add = [&](int64_t id, int priority, int64_t created, bool command) {
    QueuedJob q;
    q.id = id;
    q.priority = priority;
    q.created_ms = created;
    q.resource_gpu = "any";
    q.command = command;
    queue.insert(q);
  };
  add(1, 50, 100, true);
  add(2, 50, 200, false);
  add(3, 90, 300, true);  // later, but higher priority: first of the command queue
  add(4, 50, 400, true);
  const auto places = queue_places(queue, {1, 2, 3, 4, 99});
  ASSERT_EQ(places.size(), 4u) << "an id not queued has no place";
  EXPECT_EQ(places.at(3).position, 1);
  EXPECT_EQ(places.at(1).position, 2);
  EXPECT_EQ(places.at(4).position, 3);
  EXPECT_EQ(places.at(4).length, 3);
  EXPECT_EQ(places.at(4).queue, "unplaced: any x1, command");
  EXPECT_EQ(places.at(2).position, 1);
  EXPECT_EQ(places.at(2).length, 1);
  EXPECT_TRUE(queue_places(queue, {}).empty());
}

// A job's place in the fair-share order in words: its ordinal, the jobs in line, whose it is and
// the figures of its score; ordinals as people write them.
TEST(JobWait, AFairSharePlaceSaysWhereAndWhy) {
  EXPECT_EQ(ordinal(1), "1st");
  EXPECT_EQ(ordinal(2), "2nd");
  EXPECT_EQ(ordinal(3), "3rd");
  EXPECT_EQ(ordinal(4), "4th");
  EXPECT_EQ(ordinal(11), "11th");
  EXPECT_EQ(ordinal(12), "12th");
  EXPECT_EQ(ordinal(13), "13th");
  EXPECT_EQ(ordinal(21), "21st");
  EXPECT_EQ(ordinal(112), "112th");
  EXPECT_EQ(fair_share_note({3, 12, "bob", 0.42, 50, 5420.0}),
            "fair share: 3rd of 12 in line (user bob's factor 0.420, priority 50, score 5420.0)");
}

}  // namespace
}  // namespace jobctl::daemon::jobs
