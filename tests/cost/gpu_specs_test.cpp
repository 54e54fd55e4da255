#include "cost/gpu_specs.h"

#include <gtest/gtest.h>

namespace jobctl::cost {
namespace {

TEST(GpuSpecs, DesignSeedFacts) {
  // docs/cost-model.md seed facts: dense FP16/BF16 tensor TFLOPS / FP32 TFLOPS / memory GB / bandwidth GB/s / TDP W.
  struct Fact {
    const char* name;
    double fp16, fp32, mem, bw, tdp;
  };
  for (const Fact& f : {Fact{"T4", 65, 8.1, 16, 320, 70}, Fact{"V100", 125, 15.7, 16, 900, 300},
                        Fact{"A100", 312, 19.5, 40, 1555, 400}, Fact{"A100-80GB", 312, 19.5, 80, 2039, 400},
                        Fact{"L4", 121, 30.3, 24, 300, 72}, Fact{"RTX4090", 165, 82.6, 24, 1008, 450},
                        Fact{"H100", 989, 66.9, 80, 3350, 700}, Fact{"H200", 989, 67, 141, 4800, 700}}) {
    const GpuSpec* g = find_gpu(f.name);
    ASSERT_NE(g, nullptr) << f.name;
    EXPECT_DOUBLE_EQ(g->fp16_tflops, f.fp16) << f.name;
    EXPECT_DOUBLE_EQ(g->fp32_tflops, f.fp32) << f.name;
    EXPECT_DOUBLE_EQ(g->memory_gb, f.mem) << f.name;
    EXPECT_DOUBLE_EQ(g->bandwidth_gbs, f.bw) << f.name;
    EXPECT_DOUBLE_EQ(g->tdp_w, f.tdp) << f.name;
    EXPECT_FALSE(g->source.empty());
  }
}

TEST(GpuSpecs, NamesAreNormalised) {
  EXPECT_EQ(canonical_gpu_name("NVIDIA Tesla V100"), "V100");
  EXPECT_EQ(canonical_gpu_name("rtx 4090"), "RTX4090");
  EXPECT_EQ(canonical_gpu_name("GeForce RTX 4090"), "RTX4090");
  EXPECT_EQ(canonical_gpu_name("H100-SXM"), "H100");
  EXPECT_EQ(canonical_gpu_name("a100-80gb"), "A100-80GB");
  EXPECT_EQ(canonical_gpu_name("A100", 80), "A100-80GB");
  EXPECT_EQ(canonical_gpu_name("A100", 40), "A100");
  EXPECT_EQ(canonical_gpu_name("V100", 32), "V100-32GB");
  EXPECT_EQ(canonical_gpu_name("CPU"), "cpu");
  EXPECT_EQ(canonical_gpu_name("  Gaudi2 "), "Gaudi2");  // unknown: kept, trimmed
  EXPECT_EQ(find_gpu("Gaudi2"), nullptr);
  EXPECT_NE(find_gpu("cpu"), nullptr);
}

TEST(GpuSpecs, PrecisionFallsBackToFp32) {
  const GpuSpec* v100 = find_gpu("V100");
  ASSERT_NE(v100, nullptr);
  EXPECT_DOUBLE_EQ(peak_tflops(*v100, Precision::fp16), 125);
  EXPECT_DOUBLE_EQ(peak_tflops(*v100, Precision::bf16), 15.7);  // no BF16 on Volta
  EXPECT_DOUBLE_EQ(peak_tflops(*v100, Precision::tf32), 15.7);  // no TF32 on Volta
  const GpuSpec* a100 = find_gpu("A100");
  EXPECT_DOUBLE_EQ(peak_tflops(*a100, Precision::tf32), 156);
  EXPECT_EQ(parse_precision("bf16"), Precision::bf16);
  EXPECT_FALSE(parse_precision("fp8").has_value());
}

TEST(GpuSpecs, EveryRowIsConsistent) {
  for (const GpuSpec& g : gpu_specs()) {
    EXPECT_GT(g.fp32_tflops, 0) << g.name;
    EXPECT_GT(g.tdp_w, 0) << g.name;
    EXPECT_EQ(canonical_gpu_name(g.name), g.name) << g.name;
    for (Precision p : {Precision::tf32, Precision::fp16, Precision::bf16})
      EXPECT_GE(peak_tflops(g, p), g.fp32_tflops) << g.name;
  }
}

}  // namespace
}  // namespace jobctl::cost
