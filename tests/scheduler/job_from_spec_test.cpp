#include <gtest/gtest.h>

#include "cost/price_catalog.h"
#include "base/readable.h"
#include "cost/transformer_estimate.h"
#include "cost/vram_estimate.h"
#include "scheduler/job.h"
#include "scheduler/placement.h"
#include "scheduler/placement_json.h"

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

// A built-in model's workload is described from its layers in the fields a command job's
// estimate.model fills (parameters, compute, memory per GPU), and the placement document shows
// both the same way: its `workload` object and the reason's runtime note.
TEST(JobFromSpec, ABuiltInModelsWorkloadIsDescribedLikeATransformers) {
  auto mlp = train::parse_job_spec(R"({"model": {"kind": "mlp", "hidden": [256, 128]},
    "data": {"dataset": "fashion-mnist"}, "train": {"epochs": 10, "batch_size": 128}})");
  ASSERT_TRUE(mlp) << mlp.error().message;
  const auto stats = train::model_stats(*mlp);
  const Job m = job_from_spec("mlp", *mlp, stats, 0);
  EXPECT_EQ(m.workload.parameters, 235146.0);
  EXPECT_EQ(m.workload.runtime_note, "runtime from the model: 235.1K parameters x 600.0K samples x " +
                                         readable::magnitude(stats.training_flops_per_sample) + " FLOPs each");

  auto t = train::parse_job_spec(R"({"command": ["python3", "train.py"], "estimate": {"model":
    {"layers": 12, "hidden": 768, "heads": 12, "vocab": 50257, "seq_len": 1024, "tokens": 1000000000,
     "precision": "bf16"}}})");
  ASSERT_TRUE(t) << t.error().message;
  const Job g = job_from_spec("gpt2", *t, train::model_stats(*t), 0);
  EXPECT_NEAR(g.workload.parameters, cost::estimate_transformer(*t->estimate->model, 1).parameters, 1e-6);

  cost::EfficiencyCalibrator calibration;
  PlacementContext ctx(cost::seed_catalog(), {}, calibration);
  LocalCapacity none;
  for (const Job* j : {&m, &g}) {
    std::vector<Candidate> table;
    const auto d = place(*j, ctx, none, 0, &table);
    const nlohmann::json doc = placement_json(d, table, *j, ctx, none, PlacementDocumentInfo{"", 0, 1.0});
    const nlohmann::json& w = doc["workload"];
    EXPECT_EQ(w["model_kind"], j->workload.model_kind) << w;
    EXPECT_EQ(w["parameters"].get<double>(), j->workload.parameters) << w;
    EXPECT_EQ(w["training_flops"].get<double>(), j->workload.training_flops) << w;
    EXPECT_EQ(w["gpus"], 1) << w;
    EXPECT_NEAR(w["memory_gib_per_gpu"].get<double>(), static_cast<double>(j->workload.vram_bytes_per_gpu) / (1 << 30), 1e-12)
        << w;
    EXPECT_NE(doc["reason"].get<std::string>().find(j == &m ? "runtime from the model: " : "runtime from estimate.model: "),
              std::string::npos)
        << doc["reason"];
    for (const auto& c : doc["candidates"]) EXPECT_GT(c["memory_gib_per_gpu"].get<double>(), 0) << c;
  }
}

}  // namespace
}  // namespace jobctl::scheduler
