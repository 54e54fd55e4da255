// The worker protocol's messages: what one side encodes the other decodes to the same value, and
// jobctld's decoders refuse what a report must not carry, naming the field.
#include "protocol/worker_messages.h"

#include <gtest/gtest.h>

#include <string>

namespace jobctl::protocol {
namespace {

using nlohmann::json;

TEST(WorkerMessages, ReportsRoundTrip) {
  const HeartbeatReport hb{{7, 3}, R"({"step":12,"loss":0.5})", {{1795000000123, "line one"}, {1795000001000, "line two"}}};
  auto back = heartbeat_report_from_json(to_json(hb), 1024);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->lease.worker_id, 7);
  EXPECT_EQ(back->lease.epoch, 3);
  ASSERT_TRUE(back->progress_json);
  EXPECT_EQ(json::parse(*back->progress_json), json::parse(*hb.progress_json));
  ASSERT_EQ(back->log.size(), 2u);
  EXPECT_EQ(back->log[0].time_ms, 1795000000123);
  EXPECT_EQ(back->log[0].text, "line one");
  EXPECT_EQ(back->log[1].time_ms, 1795000001000);
  EXPECT_EQ(back->log[1].text, "line two");

  auto bare = heartbeat_report_from_json(to_json(HeartbeatReport{{7, 3}, std::nullopt, {}}), 1024);
  ASSERT_TRUE(bare);
  EXPECT_FALSE(bare->progress_json);
  EXPECT_TRUE(bare->log.empty());

  auto done = completion_report_from_json(to_json(CompletionReport{{2, 5}, R"({"final_loss":0.25})"}));
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(json::parse(done->result_json), json::parse(R"({"final_loss":0.25})"));
  auto failed = failure_report_from_json(to_json(FailureReport{{2, 5}, "exit code 3"}));
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->error, "exit code 3");
  auto given_back = preemption_report_from_json(to_json(PreemptionReport{{2, 5}, "SIGTERM: worker stopping"}));
  ASSERT_TRUE(given_back);
  EXPECT_EQ(given_back->reason, "SIGTERM: worker stopping");
  EXPECT_EQ(given_back->lease.epoch, 5);
}

TEST(WorkerMessages, AnswersRoundTrip) {
  LeaseOffer offer;
  offer.job_id = 41;
  offer.epoch = 2;
  offer.name = "mnist";
  offer.spec_json = R"({"name":"mnist","train":{"epochs":1}})";
  offer.lease_expires_ms = 123456;
  offer.resume = ResumePoint{300, 1234, 0x0a0b0c0du};
  offer.gpus = {1, 3};
  auto back = lease_offer_from_json(to_json(offer));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->job_id, 41);
  EXPECT_EQ(back->epoch, 2);
  EXPECT_EQ(back->name, "mnist");
  EXPECT_EQ(json::parse(back->spec_json), json::parse(offer.spec_json));
  EXPECT_EQ(back->lease_expires_ms, 123456);
  ASSERT_TRUE(back->resume);
  EXPECT_EQ(back->resume->step, 300);
  EXPECT_EQ(back->resume->bytes, 1234);
  EXPECT_EQ(back->resume->crc32c, 0x0a0b0c0du);
  EXPECT_EQ(back->gpus, (std::vector<int>{1, 3}));
  EXPECT_FALSE(back->gang);  // a job on one machine
  EXPECT_FALSE(to_json(offer).contains("gang"));

  offer.gang = GangRendezvous{.rank = 2,
                              .nodes = 3,
                              .addrs = {"10.0.0.1", "10.0.0.2", "gpu-box-3"},
                              .master_addr = "10.0.0.1",
                              .master_port = 29500,
                              .gpus_per_node = 8};
  auto gang = lease_offer_from_json(to_json(offer));
  ASSERT_TRUE(gang) << gang.error().message;
  ASSERT_TRUE(gang->gang);
  EXPECT_EQ(gang->gang->rank, 2);
  EXPECT_EQ(gang->gang->nodes, 3);
  EXPECT_EQ(gang->gang->addrs, (std::vector<std::string>{"10.0.0.1", "10.0.0.2", "gpu-box-3"}));
  EXPECT_EQ(gang->gang->master_addr, "10.0.0.1");
  EXPECT_EQ(gang->gang->master_port, 29500);
  EXPECT_EQ(gang->gang->gpus_per_node, 8);
  EXPECT_EQ(gang->job_id, 41);

  auto reply = heartbeat_reply_from_json(to_json(HeartbeatReply{.cancel = false, .move = true, .lease_expires_ms = 9}));
  ASSERT_TRUE(reply);
  EXPECT_FALSE(reply->cancel);
  EXPECT_TRUE(reply->move);
  EXPECT_EQ(reply->lease_expires_ms, 9);

  auto registered = worker_registered_from_json(to_json(WorkerRegistered{5, "secret", 2, 30, 25}));
  ASSERT_TRUE(registered);
  EXPECT_EQ(registered->worker_id, 5);
  EXPECT_EQ(registered->worker_secret, "secret");
  EXPECT_EQ(registered->max_lease_wait_s, 25);
}

TEST(WorkerMessages, ReportDecodersNameTheFieldTheyRefuse) {
  auto field_of = [](const auto& r) { return r ? std::string("(accepted)") : r.error().field; };
  EXPECT_EQ(field_of(heartbeat_report_from_json(json{{"worker_id", 1}, {"epoch", 1}, {"extra", 1}}, 64)), "extra");
  EXPECT_EQ(field_of(heartbeat_report_from_json(json{{"worker_id", 0}, {"epoch", 1}}, 64)), "worker_id");
  EXPECT_EQ(field_of(heartbeat_report_from_json(json{{"worker_id", 1}}, 64)), "epoch");
  EXPECT_EQ(field_of(heartbeat_report_from_json(json{{"worker_id", 1}, {"epoch", 1}, {"progress", "text"}}, 64)),
            "progress");
  EXPECT_EQ(field_of(heartbeat_report_from_json(json{{"worker_id", 1}, {"epoch", 1}, {"log", 5}}, 64)), "log");
  EXPECT_EQ(field_of(heartbeat_report_from_json(json{{"worker_id", 1}, {"epoch", 1}, {"log", {{{"text", "x"}}}}}, 64)),
            "log");  // a line without its time
  EXPECT_EQ(field_of(heartbeat_report_from_json(
                json{{"worker_id", 1}, {"epoch", 1}, {"log", {{{"time_ms", -1}, {"text", "x"}}}}}, 64)),
            "log");
  // An unstamped plain string is still read (jobctld stamps it on arrival).
  auto plain = heartbeat_report_from_json(json{{"worker_id", 1}, {"epoch", 1}, {"log", "a line"}}, 64);
  ASSERT_TRUE(plain);
  ASSERT_EQ(plain->log.size(), 1u);
  EXPECT_EQ(plain->log[0].time_ms, 0);
  auto too_long = heartbeat_report_from_json(
      json{{"worker_id", 1}, {"epoch", 1}, {"log", {{{"time_ms", 1}, {"text", std::string(40, 'x')}}, {{"time_ms", 2}, {"text", std::string(25, 'x')}}}}},
      64);
  ASSERT_FALSE(too_long);
  EXPECT_EQ(too_long.error().code, ErrorCode::payload_too_large);
  EXPECT_EQ(field_of(completion_report_from_json(json{{"worker_id", 1}, {"epoch", 1}})), "result");
  EXPECT_EQ(field_of(completion_report_from_json(
                json{{"worker_id", 1}, {"epoch", 1}, {"result", {{"final_loss", "low"}}}})),
            "result.final_loss");
  EXPECT_EQ(field_of(failure_report_from_json(json{{"worker_id", 1}, {"epoch", 1}})), "error");
  EXPECT_EQ(field_of(failure_report_from_json(
                json{{"worker_id", 1}, {"epoch", 1}, {"error", std::string(kMaxFailureBytes + 1, 'e')}})),
            "error");
  auto rejected = checkpoint_rejection_from_json(to_json(CheckpointRejection{{1, 2}, "resume refused", 100}));
  ASSERT_TRUE(rejected) << rejected.error().message;
  EXPECT_EQ(rejected->fallback_step, 100);
  auto fresh = checkpoint_rejection_from_json(to_json(CheckpointRejection{{1, 2}, "corrupt", std::nullopt}));
  ASSERT_TRUE(fresh);
  EXPECT_FALSE(fresh->fallback_step);
  EXPECT_EQ(field_of(checkpoint_rejection_from_json(
                json{{"worker_id", 1}, {"epoch", 1}, {"error", "x"}, {"fallback_step", -1}})),
            "fallback_step");
  // A preempt without a reason is a worker giving the job back.
  auto released = preemption_report_from_json(json{{"worker_id", 1}, {"epoch", 1}});
  ASSERT_TRUE(released);
  EXPECT_EQ(released->reason, "worker released the job");
}

TEST(WorkerMessages, AnInconsistentGangIsAnError) {
  const json good = {{"rank", 1},          {"nodes", 2},           {"addrs", {"10.0.0.1", "10.0.0.2"}},
                     {"master_addr", "10.0.0.1"}, {"master_port", 29500}, {"gpus_per_node", 1}};
  const auto offer_with = [](const json& gang) { return json{{"job_id", 4}, {"epoch", 1}, {"gang", gang}}; };
  ASSERT_TRUE(lease_offer_from_json(offer_with(good)));
  const auto refusal = [&](const char* key, const json& value) {
    json gang = good;
    gang[key] = value;
    auto r = lease_offer_from_json(offer_with(gang));
    return r ? std::string("(accepted)") : r.error().field;
  };
  EXPECT_EQ(refusal("rank", 2), "gang");   // rank >= nodes
  EXPECT_EQ(refusal("rank", -1), "gang");
  EXPECT_EQ(refusal("nodes", 0), "gang");
  EXPECT_EQ(refusal("nodes", 3), "gang");  // three nodes, two addresses
  EXPECT_EQ(refusal("addrs", {"10.0.0.1"}), "gang");
  EXPECT_EQ(refusal("addrs", {"10.0.0.1", 7}), "gang");  // an address that is not a string
  EXPECT_EQ(refusal("rank", "0"), "rank");
  EXPECT_EQ(refusal("master_port", "29500"), "master_port");
  EXPECT_EQ(refusal("master_addr", 1), "master_addr");
  EXPECT_EQ(refusal("gpus_per_node", json()), "gpus_per_node");
  auto bad = lease_offer_from_json(offer_with(json{{"rank", 2}, {"nodes", 2}, {"addrs", {"a", "b"}},
                                                   {"master_addr", "a"}, {"master_port", 1}, {"gpus_per_node", 0}}));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(bad.error().message.find("gang is inconsistent"), std::string::npos) << bad.error().message;
}

TEST(WorkerMessages, AnswersWithoutTheirRequiredFieldsAreErrors) {
  EXPECT_FALSE(lease_offer_from_json(json{{"epoch", 1}}));
  EXPECT_FALSE(worker_registered_from_json(json{{"worker_id", 3}}));  // no secret: an older jobctld
  EXPECT_FALSE(heartbeat_reply_from_json(json::array()));
  // A newer jobctld's extra fields are ignored.
  EXPECT_TRUE(heartbeat_reply_from_json(json{{"cancel", true}, {"later_field", 1}}));
}

// A checkpoint as the lease and the checkpoint list name it: a mistyped figure or a CRC that is not
// 8 hex digits is an error naming the field, never a default or an exception.
TEST(WorkerMessages, ACheckpointObjectIsReadStrictly) {
  auto ok = resume_point_from_json(json{{"step", 300}, {"bytes", 1234}, {"crc32c", "0a0b0c0d"}, {"url", "/x"}});
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->crc32c, 0x0a0b0c0du);
  EXPECT_EQ(resume_point_from_json(json{{"step", "300"}, {"bytes", 1}, {"crc32c", "00000000"}}).error().field, "step");
  EXPECT_EQ(resume_point_from_json(json{{"step", 1}, {"crc32c", "00000000"}}).error().field, "bytes");
  for (const json& crc : {json("abc"), json("0a0b0c0g"), json(12), json(nullptr)})
    EXPECT_EQ(resume_point_from_json(json{{"step", 1}, {"bytes", 1}, {"crc32c", crc}}).error().field, "crc32c") << crc;
  auto offer = lease_offer_from_json(json{{"job_id", 4}, {"epoch", 1}, {"resume", {{"step", 3}, {"bytes", 1}, {"crc32c", "zz"}}}});
  ASSERT_FALSE(offer);
  EXPECT_EQ(offer.error().field, "crc32c");
}

}  // namespace
}  // namespace jobctl::protocol
