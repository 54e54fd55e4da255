#include "train/spec/model_stats.h"

#include <gtest/gtest.h>

namespace jobctl::train {
namespace {

JobSpec spec(const char* text) {
  auto r = parse_job_spec(text);
  EXPECT_TRUE(r) << r.error().message;
  return *r;
}

TEST(ModelStats, MlpCountsByHand) {
  // 784-256-128-10: (784*256+256) + (256*128+128) + (128*10+10) = 200960 + 32896 + 1290.
  const ModelStats s = model_stats(spec(R"({"model": {"kind": "mlp", "hidden": [256, 128]},
                                            "data": {"dataset": "fashion-mnist"}})"));
  EXPECT_EQ(s.parameters, 235146);
  // Dense FLOPs dominate: training ~ 6 x parameters per sample (plus element-wise work).
  EXPECT_NEAR(s.training_flops_per_sample / (6.0 * 235146), 1.0, 0.01);
  EXPECT_EQ(s.weight_bytes, 235146 * 4);
  EXPECT_EQ(s.optimizer_state_bytes, 2 * s.weight_bytes);  // AdamW
  EXPECT_EQ(s.train_samples_per_epoch, 60000);
  EXPECT_EQ(s.layers.size(), 4u);
  // Per sample: input 784, label and batch index; 256 + 128 ReLU outputs (an fp32 ReLU layer keeps
  // no separate pre-activation); 10 logits; two gradients passed between layers of the largest
  // layer input (256); 10 logit gradients. Plus 4 bytes per sample of the whole step (its loss).
  EXPECT_EQ(s.activation_bytes_per_sample, (784 + 256 + 128 + 10 + 2 * 256 + 10) * 4 + 8);
  // The data on the device: 70,000 images and labels, 10,000 evaluation results, step constants.
  EXPECT_EQ(s.data_bytes, 70000 * (784 * 4 + 4) + 10000 * 8 + 24);
  EXPECT_EQ(s.training_bytes(128),
            s.weight_bytes * 4 + s.activation_bytes_per_sample * 128 + 4 * 128 + s.data_bytes + 4 * 469);
  EXPECT_DOUBLE_EQ(s.total_training_flops(2), s.training_flops_per_sample * 60000 * 2);
}

TEST(ModelStats, CnnCountsRealConvFlops) {
  const ModelStats s = model_stats(spec(R"({"model": {"kind": "cnn", "channels": [32, 64], "hidden": [128]},
                                            "data": {"dataset": "fashion-mnist"}, "train": {"optimizer": "sgd"}})"));
  // conv1 1->32 on 28x28, pool to 14x14; conv2 32->64 on 14x14, pool to 7x7; dense 3136->128->10.
  const int64_t params = (1 * 9 * 32 + 32) + (32 * 9 * 64 + 64) + (3136 * 128 + 128) + (128 * 10 + 10);
  EXPECT_EQ(s.parameters, params);
  const double conv_flops = 2.0 * 1 * 9 * 32 * 28 * 28 + 2.0 * 32 * 9 * 64 * 14 * 14;
  EXPECT_GT(s.forward_flops_per_sample, conv_flops + 2.0 * 3136 * 128);
  EXPECT_LT(s.forward_flops_per_sample, (conv_flops + 2.0 * 3136 * 128 + 2.0 * 1280) * 1.05);
  EXPECT_DOUBLE_EQ(s.training_flops_per_sample, 3.0 * s.forward_flops_per_sample);
  EXPECT_EQ(s.optimizer_state_bytes, s.weight_bytes);  // SGD with momentum
}

TEST(ModelStats, SyntheticDataSetsTheShape) {
  const ModelStats s = model_stats(spec(R"({"model": {"kind": "mlp", "hidden": []},
      "data": {"dataset": "synthetic", "samples": 1000, "features": 20, "classes": 5}})"));
  EXPECT_EQ(s.parameters, 20 * 5 + 5);
  EXPECT_EQ(s.train_samples_per_epoch, 1000);
}

}  // namespace
}  // namespace jobctl::train
