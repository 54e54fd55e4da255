#include "worker/job_protocol.h"

#include <gtest/gtest.h>

namespace jobctl::worker {
namespace {

using Kind = JobProtocol::Kind;

TEST(JobProtocol, FollowsJobctlTrainsEvents) {
  JobProtocol p;
  EXPECT_EQ(p.apply(R"({"event":"start","device":"cpu","device_name":"x86","parameters":235146,"steps_per_epoch":469,"total_steps":938,"start_step":0,"resumed_from":null})"), Kind::start);
  EXPECT_EQ(p.progress()["total_steps"], 938);
  EXPECT_EQ(p.progress()["device"], "cpu");
  // The kernels (jobctl-train's start event) travel with the progress, and a resume that changed them.
  EXPECT_EQ(p.apply(R"J({"event":"start","device":"cpu","device_name":"x86","kernels":"OpenBLAS 0.3.21 (SkylakeX)","kernels_selection":"selected SkylakeX","kernels_check":"passed","checkpoint_kernels":"OpenBLAS 0.3.21 (Haswell)","kernels_changed":true,"total_steps":938,"start_step":0,"resumed_from":"/c"})J"), Kind::start);
  EXPECT_EQ(p.progress()["kernels"], "OpenBLAS 0.3.21 (SkylakeX)");
  EXPECT_EQ(p.progress()["checkpoint_kernels"], "OpenBLAS 0.3.21 (Haswell)");
  EXPECT_EQ(p.progress()["kernels_changed"], true);
  EXPECT_FALSE(p.progress().contains("kernels_selection")) << "only the documented progress fields reach a heartbeat";
  EXPECT_EQ(p.apply(R"({"event":"progress","step":10,"total_steps":938,"epoch":0,"loss":2.25,"lr":0.001,"step_ms":3.5,"samples_per_s":36000})"), Kind::progress);
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
  EXPECT_FALSE(p.result());
  EXPECT_EQ(p.apply(R"({"event":"result","steps":938,"final_checkpoint_crc32c":"0badf00d"})"), Kind::result);
  ASSERT_TRUE(p.result());
  EXPECT_EQ((*p.result())["final_checkpoint_crc32c"], "0badf00d");
  EXPECT_FALSE(p.result()->contains("event"));
  EXPECT_EQ(p.log_lines(), 0);
}

TEST(JobProtocol, AUserProgramsLines) {
  JobProtocol p;
  EXPECT_EQ(p.apply("Epoch 1/3 ..."), Kind::log);
  EXPECT_EQ(p.apply(R"({"event":"progress","step":5,"total_steps":100,"loss":1.5,"note":{"x":1}})"), Kind::progress);
  EXPECT_TRUE(p.started());
  EXPECT_EQ(p.progress()["total_steps"], 100);
  EXPECT_FALSE(p.progress().contains("note")) << "only the documented progress fields reach a heartbeat";
  EXPECT_EQ(p.apply(R"({"event":"checkpoint","path":"ckpt/model.pt"})"), Kind::checkpoint);
  EXPECT_EQ((*p.last_checkpoint())["path"], "ckpt/model.pt");
  EXPECT_EQ(p.apply(R"({"event":"checkpoint"})"), Kind::log) << "a checkpoint without a path is not one";
  EXPECT_EQ(p.apply(R"({"event":"result","accuracy":0.87,"weights_sha256":"ab"})"), Kind::result);
  EXPECT_EQ((*p.result())["weights_sha256"], "ab");
  EXPECT_EQ(p.log_lines(), 2);
}

TEST(JobProtocol, ErrorsAndNoise) {
  JobProtocol p;
  EXPECT_EQ(p.apply("loading data..."), Kind::log);
  EXPECT_EQ(p.apply("[1,2]"), Kind::log);
  EXPECT_EQ(p.apply(R"({"no_event":1})"), Kind::log);
  EXPECT_EQ(p.apply(R"({"event":"something-new","x":1})"), Kind::log);
  EXPECT_EQ(p.apply(R"({"event":"error","message":"data.path: no such folder"})"), Kind::error);
  EXPECT_EQ(p.error(), "data.path: no such folder");
  EXPECT_FALSE(p.resume_refused());
  EXPECT_EQ(p.apply(R"({"event":"error","message":"bad checkpoint","resume_refused":"yes"})"), Kind::error);
  EXPECT_FALSE(p.resume_refused()) << "only a boolean true asks for an older checkpoint";
  EXPECT_EQ(p.apply(R"({"event":"error","message":"bad checkpoint","resume_refused":true})"), Kind::error);
  EXPECT_TRUE(p.resume_refused());
  EXPECT_EQ(p.log_lines(), 4);
}

}  // namespace
}  // namespace jobctl::worker
