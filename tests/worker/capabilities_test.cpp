#include "worker/capabilities.h"

#include <gtest/gtest.h>

namespace jobctl::worker {
namespace {

TEST(Capabilities, ParsesNvidiaSmiCsv) {
  auto gpus = parse_nvidia_smi(
      "NVIDIA H100 80GB HBM3, 81559 MiB\n"
      "NVIDIA A100-SXM4-40GB, 40960 MiB\r\n"
      "\n"
      "garbage line\n"
      "Tesla T4, 15 GiB\n");
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[0].model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus[0].memory_mb, 81559);
  EXPECT_EQ(gpus[1].model, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(gpus[2].memory_mb, 15 * 1024);
  EXPECT_TRUE(parse_nvidia_smi("").empty());
}

TEST(Capabilities, JsonMatchesTheRegistrationShape) {
  auto j = capabilities_json({{"Tesla T4", 15360}}, 8, 32000);
  EXPECT_EQ(j["gpus"][0]["model"], "Tesla T4");
  EXPECT_EQ(j["gpus"][0]["memory_mb"], 15360);
  EXPECT_EQ(j["cpu_cores"], 8);
  EXPECT_EQ(j["memory_mb"], 32000);
  EXPECT_GE(detect_cpu_cores(), 1);
  EXPECT_GT(detect_memory_mb(), 0);
}

}  // namespace
}  // namespace jobctl::worker
