#include <gtest/gtest.h>

#include "cost/price_catalog.h"
#include "cost/vram_estimate.h"
#include "scheduler/job.h"
#include "scheduler/placement.h"

namespace jobctl::scheduler {
namespace {

// docs/architecture.md's example spec, end to end: spec -> model_stats -> Job -> placement on the seed catalog.
TEST(JobFromSpec, DesignExample) {
  auto spec = train::parse_job_spec(R"({
    "name": "fmnist-mlp",
    "model": {"kind": "mlp", "hidden": [256, 128], "activation": "relu"},
    "data": {"dataset": "fashion-mnist"},
    "train": {"epochs": 10, "batch_size": 128, "optimizer": "adamw", "lr": 0.001,
              "weight_decay": 0.0001, "schedule": "cosine", "seed": 42},
    "checkpoint": {"every_steps": 500, "keep": 3},
    "resources": {"gpu": "any", "gpus": 1},
    "placement": {"mode": "auto", "spot": "auto", "max_usd_per_hour": 4.0, "deadline_hours": 6},
    "priority": 50
  })");
  ASSERT_TRUE(spec) << spec.error().message;
  const auto stats = train::model_stats(*spec);
  const Job j = job_from_spec("job-1", *spec, stats, 1000);
  EXPECT_EQ(j.id, "job-1");
  EXPECT_EQ(j.priority, 50);
  EXPECT_EQ(j.submitted_ms, 1000);
  EXPECT_EQ(j.gpu, "any");
  EXPECT_EQ(j.workload.model_kind, "mlp");
  EXPECT_EQ(j.workload.gpus, 1);
  EXPECT_DOUBLE_EQ(j.workload.training_flops, stats.total_training_flops(10));
  // 784-256-128-10: 235,146 parameters; ~6 x params x 60,000 x 10 FLOPs.
  EXPECT_EQ(stats.parameters, 235146);
  EXPECT_NEAR(j.workload.training_flops / (6.0 * 235146 * 60000 * 10), 1.0, 0.02);
  EXPECT_EQ(j.workload.vram_bytes_per_gpu, cost::estimate_vram(stats, 128).total_bytes);
  EXPECT_EQ(j.max_usd_per_hour, 4.0);
  EXPECT_EQ(j.deadline_hours, 6.0);

  cost::EfficiencyCalibrator calibration;
  PlacementContext ctx(cost::seed_catalog(), {}, calibration);
  LocalCapacity none;
  const auto d = place(j, ctx, none, 1000);
  ASSERT_NE(d.outcome, Outcome::unplaceable);
  EXPECT_LE(d.choice.usd_per_hour, 4.0);
  EXPECT_TRUE(d.choice.meets_deadline);
  EXPECT_EQ(d.reason_code, ReasonCode::cheapest_meeting_deadline);
  // A tiny MLP: minutes of GPU time; the cheapest spot T4 wins.
  EXPECT_EQ(d.outcome, Outcome::launch_spot);
  EXPECT_EQ(ctx.offers()[d.choice.source].instance_type, "g4dn.xlarge");
}

}  // namespace
}  // namespace jobctl::scheduler
