#include "worker/train_progress.h"

#include <gtest/gtest.h>

namespace jobctl::worker {
namespace {

using Kind = TrainProgress::Kind;

TEST(TrainProgress, FollowsTheDocumentedEvents) {
  TrainProgress p;
  EXPECT_EQ(p.apply(R"({"event":"start","device":"cpu","device_name":"x86","parameters":235146,"steps_per_epoch":469,"total_steps":938,"start_step":0,"resumed_from":null})"), Kind::start);
  EXPECT_EQ(p.progress()["total_steps"], 938);
  EXPECT_EQ(p.progress()["device"], "cpu");
  EXPECT_EQ(p.apply(R"({"event":"step","step":10,"epoch":0,"loss":2.25,"lr":0.001,"step_ms":3.5,"samples_per_s":36000})"), Kind::step);
  EXPECT_EQ(p.progress()["step"], 10);
  EXPECT_DOUBLE_EQ(p.progress()["loss"].get<double>(), 2.25);
  EXPECT_EQ(p.apply(R"({"event":"checkpoint","step":10,"path":"/x","bytes":10,"write_ms":1,"reason":"periodic"})"), Kind::checkpoint);
  EXPECT_EQ(p.progress()["last_checkpoint_step"], 10);
  EXPECT_EQ(p.apply(R"({"event":"epoch","epoch":0,"train_loss":0.6,"test_loss":0.5,"test_accuracy":0.83})"), Kind::epoch);
  EXPECT_EQ(p.progress()["epochs_done"], 1);
  EXPECT_DOUBLE_EQ(p.progress()["test_accuracy"].get<double>(), 0.83);
  EXPECT_FALSE(p.done());
  EXPECT_EQ(p.apply(R"({"event":"done","status":"succeeded","step":938,"final_loss":0.41,"test_accuracy":0.85,"elapsed_s":12.5})"), Kind::done);
  ASSERT_TRUE(p.done());
  EXPECT_EQ((*p.done())["status"], "succeeded");
  EXPECT_EQ(p.ignored_lines(), 0);
}

TEST(TrainProgress, ErrorsAndNoise) {
  TrainProgress p;
  EXPECT_EQ(p.apply("loading data..."), Kind::not_json);
  EXPECT_EQ(p.apply("[1,2]"), Kind::not_json);
  EXPECT_EQ(p.apply(R"({"no_event":1})"), Kind::not_json);
  EXPECT_EQ(p.apply(R"({"event":"something-new","x":1})"), Kind::other);
  EXPECT_EQ(p.apply(R"({"event":"error","message":"data.path: no such folder"})"), Kind::error);
  EXPECT_EQ(p.error(), "data.path: no such folder");
  EXPECT_EQ(p.ignored_lines(), 3);
}

}  // namespace
}  // namespace jobctl::worker
