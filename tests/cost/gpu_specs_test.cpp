#include "cost/gpu_specs.h"

#include <set>

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

// What nvidia-smi prints (tests/fixtures/nvidia-smi holds the same lines as fake nvidia-smi
// programs), what catalogs list and what people type: each is exactly one variant.
TEST(GpuSpecs, EveryNameOfADeviceIsOneVariant) {
  struct Case {
    const char* name;
    double memory_gb;
    const char* variant;
  };
  for (const Case& c : {
           Case{"NVIDIA H100 80GB HBM3", 81559 / 1024.0, "H100-SXM"},
           Case{"NVIDIA H100 PCIe", 81559 / 1024.0, "H100-PCIe"},
           Case{"NVIDIA H100 NVL", 95830 / 1024.0, "H100-NVL"},
           Case{"NVIDIA H200", 143771 / 1024.0, "H200"},
           Case{"NVIDIA A100-SXM4-40GB", 40, "A100-40GB-SXM"},
           Case{"NVIDIA A100-SXM4-80GB", 80, "A100-80GB-SXM"},
           Case{"NVIDIA A100-PCIE-40GB", 40, "A100-40GB-PCIe"},
           Case{"NVIDIA A100 80GB PCIe", 80, "A100-80GB-PCIe"},
           Case{"A100-SXM4-40GB", 0, "A100-40GB-SXM"},  // older drivers print no vendor word
           Case{"Tesla V100-SXM2-16GB", 16160 / 1024.0, "V100-16GB"},
           Case{"Tesla V100-SXM2-32GB", 32510 / 1024.0, "V100-32GB"},
           Case{"Tesla V100-PCIE-16GB", 0, "V100-16GB"},
           Case{"Tesla T4", 15, "T4"},
           Case{"NVIDIA A10G", 22.5, "A10G"},
           Case{"NVIDIA A10", 22.5, "A10"},
           Case{"NVIDIA L4", 22.5, "L4"},
           Case{"NVIDIA L40S", 45, "L40S"},
           Case{"NVIDIA GeForce RTX 4090", 24, "RTX4090"},
           Case{"NVIDIA B200", 183359 / 1024.0, "B200"},
           Case{"NVIDIA GB200", 189471 / 1024.0, "GB200"},
           Case{"NVIDIA GeForce RTX 3090", 24576 / 1024.0, "RTX3090"},
           Case{"NVIDIA GeForce RTX 5090", 32607 / 1024.0, "RTX5090"},
           Case{"NVIDIA RTX A4000", 16376 / 1024.0, "A4000"},
           Case{"NVIDIA RTX A5000", 24564 / 1024.0, "A5000"},
           Case{"NVIDIA RTX 6000 Ada Generation", 49140 / 1024.0, "RTX6000-Ada"},
           Case{"AMD Instinct MI300X", 192, "MI300X"},
           Case{"AMD Instinct MI325X", 256, "MI325X"},
           // catalog names
           Case{"A100", 40, "A100-40GB-SXM"},
           Case{"A100", 80, "A100-80GB-SXM"},
           Case{"A100-80GB", 0, "A100-80GB-SXM"},
           Case{"V100", 32, "V100-32GB"},
           Case{"V100-32GB", 0, "V100-32GB"},
           Case{"H100", 80, "H100-SXM"},
           Case{"H100-MEGA", 80, "H100-SXM"},
           Case{"RTX6000", 24, "RTX6000"},
           Case{"A6000", 48, "A6000"},
           Case{"GH200", 96, "GH200"},
           // people
           Case{"h100 pcie", 0, "H100-PCIe"},
           Case{"H100-SXM5", 0, "H100-SXM"},
           Case{"rtx 4090", 0, "RTX4090"},
           Case{"4090", 0, "RTX4090"},
           Case{"a100-80gb-pcie", 0, "A100-80GB-PCIe"},
           Case{"A100 80G", 0, "A100-80GB-SXM"},
           Case{"CPU", 0, "cpu"},
       }) {
    const GpuSpec* g = identify_gpu(c.name, c.memory_gb);
    ASSERT_NE(g, nullptr) << c.name;
    EXPECT_EQ(g->name, c.variant) << c.name;
  }
  // Look-alikes are not confused: an L40 is not an L4, an RTX 6000 Ada not a Quadro RTX 6000, a
  // GB200 not a B200, an MI300A (an APU) not an MI300X.
  EXPECT_EQ(identify_gpu("RTX 6000 Ada")->name, "RTX6000-Ada");
  EXPECT_EQ(identify_gpu("Quadro RTX 6000")->name, "RTX6000");
  EXPECT_EQ(identify_gpu("GB200")->name, "GB200");
  for (const char* unknown : {"L40", "A100X", "Gaudi2", "Radeon MI25", "4080", "H100 Ultra", "MI300A", "B100"})
    EXPECT_EQ(identify_gpu(unknown), nullptr) << unknown;
  EXPECT_EQ(canonical_gpu_name("  Gaudi2 "), "Gaudi2");  // unknown: kept, trimmed
}

TEST(GpuSpecs, ARequestNamesASetOfVariants) {
  auto names_matching = [](std::string_view request) {
    auto r = parse_gpu_request(request);
    EXPECT_TRUE(r) << request << ": " << (r ? "" : r.error().message);
    std::set<std::string> out;
    if (r)
      for (const auto& g : gpu_specs())
        if (r->matches(g)) out.insert(std::string(g.name));
    return out;
  };
  using S = std::set<std::string>;
  EXPECT_EQ(names_matching("A100"), (S{"A100-40GB-SXM", "A100-40GB-PCIe", "A100-80GB-SXM", "A100-80GB-PCIe"}));
  EXPECT_EQ(names_matching("A100-80GB"), (S{"A100-80GB-SXM", "A100-80GB-PCIe"}));
  EXPECT_EQ(names_matching("a100 pcie"), (S{"A100-40GB-PCIe", "A100-80GB-PCIe"}));
  EXPECT_EQ(names_matching("H100"), (S{"H100-SXM", "H100-PCIe", "H100-NVL"}));
  EXPECT_EQ(names_matching("H100-PCIe"), (S{"H100-PCIe"}));
  EXPECT_EQ(names_matching("NVIDIA H100 80GB HBM3"), (S{"H100-SXM", "H100-PCIe"}));  // the name says 80 GB only
  EXPECT_EQ(names_matching("V100"), (S{"V100-16GB", "V100-32GB"}));
  EXPECT_EQ(names_matching("V100-PCIe"), (S{"V100-16GB", "V100-32GB"}));  // V100 rows have no form
  EXPECT_EQ(names_matching("RTX4090"), (S{"RTX4090"}));
  EXPECT_EQ(names_matching("4090"), (S{"RTX4090"}));
  EXPECT_EQ(names_matching("cpu"), (S{"cpu"}));
  EXPECT_EQ(names_matching("any").size(), gpu_specs().size());
  EXPECT_EQ(parse_gpu_request("A100")->name(), "A100");
  EXPECT_EQ(parse_gpu_request("nvidia a100-sxm4-80gb")->name(), "A100-80GB-SXM");
  EXPECT_EQ(parse_gpu_request("ANY")->name(), "any");
  EXPECT_EQ(parse_gpu_request("T4-16GB")->name(), "T4");  // one size only: the memory says nothing
  EXPECT_EQ(parse_gpu_request("GeForce RTX 4090")->name(), "RTX4090");
}

TEST(GpuSpecs, AnUnknownRequestNamesTheFieldAndTheClosestNames) {
  auto r = parse_gpu_request("A100-48GB");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().field, "resources.gpu");
  EXPECT_NE(r.error().message.find("no A100 has 48GB"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("40GB, 80GB"), std::string::npos) << r.error().message;
  r = parse_gpu_request("RTX4080");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("closest known names: RTX4090"), std::string::npos) << r.error().message;
  r = parse_gpu_request("H10");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("H100"), std::string::npos) << r.error().message;
  EXPECT_FALSE(parse_gpu_request(""));
  EXPECT_FALSE(parse_gpu_request("cpu-8GB"));
  EXPECT_EQ(closest_gpu_names("A100-80G", 1), std::vector<std::string>{"A100-80GB"});
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

TEST(GpuSpecs, H100VariantsAreTimedAsThemselves) {
  EXPECT_DOUBLE_EQ(find_gpu("H100-PCIe")->fp32_tflops, 51.2);
  EXPECT_DOUBLE_EQ(find_gpu("H100-SXM")->fp32_tflops, 66.9);
  EXPECT_DOUBLE_EQ(find_gpu("H100 NVL")->memory_gb, 94);
}

TEST(GpuSpecs, EveryRowIsConsistent) {
  std::set<std::string_view> names;
  for (const GpuSpec& g : gpu_specs()) {
    EXPECT_TRUE(names.insert(g.name).second) << "duplicate " << g.name;
    EXPECT_GT(g.fp32_tflops, 0) << g.name;
    EXPECT_GT(g.tdp_w, 0) << g.name;
    // Its own name identifies it, and as a request its name is that name and takes it.
    EXPECT_EQ(canonical_gpu_name(g.name), g.name) << g.name;
    auto request = parse_gpu_request(g.name);
    ASSERT_TRUE(request) << g.name;
    EXPECT_TRUE(request->matches(g)) << g.name;
    EXPECT_EQ(identify_gpu(request->name(), g.memory_gb), &g) << g.name;
    for (Precision p : {Precision::tf32, Precision::fp16, Precision::bf16})
      EXPECT_GE(peak_tflops(g, p), g.fp32_tflops) << g.name;
  }
}

// A GPU the table does not know is estimated at figures no known GPU is slower than, at every
// precision (an upper bound on its time), with the memory it reports, under its own name.
TEST(GpuSpecs, AnUnknownGpuGetsTheTablesLeastFavourableFigures) {
  const std::string name = "Acme Tensor X1";
  ASSERT_EQ(identify_gpu(name), nullptr);
  const GpuSpec unknown = unknown_gpu_spec(name, 48);
  EXPECT_EQ(unknown.name, name);
  EXPECT_DOUBLE_EQ(unknown.memory_gb, 48);
  EXPECT_GT(unknown.fp32_tflops, 0);
  EXPECT_NE(std::string(unknown.source).find("not in jobctl's GPU table"), std::string::npos);
  bool some_row_as_slow = false;
  for (const GpuSpec& g : gpu_specs()) {
    if (g.family == "cpu") continue;
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
      EXPECT_LE(peak_tflops(unknown, p), peak_tflops(g, p)) << g.name << " " << to_string(p);
    EXPECT_LE(unknown.bandwidth_gbs, g.bandwidth_gbs) << g.name;
    EXPECT_GE(unknown.tdp_w, g.tdp_w) << g.name;
    some_row_as_slow |= g.fp32_tflops == unknown.fp32_tflops;
  }
  EXPECT_TRUE(some_row_as_slow) << "the FP32 figure is the slowest row's, not invented";
}

}  // namespace
}  // namespace jobctl::cost
