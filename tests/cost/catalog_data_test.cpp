// The SkyPilot catalogs in ../shared/data/catalog (real files, read-only). Skips when absent (fails
// under CI=true: tests/support/shared_data.h).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "cost/price_catalog.h"
#include "tests/support/shared_data.h"

namespace jobctl::cost {
namespace {

std::filesystem::path data_dir() { return jobctl::testing::shared_data("catalog"); }

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class CatalogData : public ::testing::Test {
 protected:
  void SetUp() override { JOBCTL_NEED_SHARED_DATA("catalog/aws_gpu_vms.csv"); }
};

TEST_F(CatalogData, Aws) {
  auto r = parse_skypilot_csv(read(data_dir() / "aws_gpu_vms.csv"), "aws", "skypilot-catalog v7");
  ASSERT_TRUE(r) << r.error().message;
  // 430 rows; the rows with an empty Price (p5e.48xlarge) are skipped with a warning each.
  EXPECT_EQ(r->offers.size() + r->warnings.size(), 430u);
  EXPECT_GT(r->offers.size(), 400u);
  for (const auto& w : r->warnings) EXPECT_NE(w.find("p5e.48xlarge"), std::string::npos) << w;
  std::set<std::string> gpus;
  bool saw_p3 = false, saw_no_spot = false;
  for (const auto& o : r->offers) {
    gpus.insert(o.gpu_model);
    EXPECT_GT(o.on_demand_usd_per_hour, 0);
    EXPECT_GT(o.gpu_memory_gb, 0) << o.name();
    if (o.instance_type == "p3.2xlarge" && o.region == "us-east-1") {
      saw_p3 = true;
      EXPECT_DOUBLE_EQ(o.on_demand_usd_per_hour, 3.06);
      EXPECT_EQ(o.gpu_model, "V100");
    }
    if (!o.spot_usd_per_hour) saw_no_spot = true;
    if (o.instance_type == "p4de.24xlarge") {
      EXPECT_EQ(o.gpu_model, "A100-80GB");
    }
  }
  EXPECT_TRUE(saw_p3);
  EXPECT_TRUE(saw_no_spot);
  for (const char* g : {"T4", "A10G", "L4", "V100", "A100", "A100-80GB", "H100"}) EXPECT_TRUE(gpus.count(g)) << g;
}

TEST_F(CatalogData, Gcp) {
  auto r = parse_skypilot_csv(read(data_dir() / "gcp_gpu_vms.csv"), "gcp");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_FALSE(r->offers.empty());
  bool saw_a2 = false;
  for (const auto& o : r->offers) {
    EXPECT_NE(o.gpu_model, "cpu") << o.name();
    if (o.instance_type == "a2-highgpu-1g" && o.zone == "us-central1-a") {
      saw_a2 = true;
      EXPECT_NEAR(o.on_demand_usd_per_hour, 0.73948 + 2.93391, 1e-9);
      EXPECT_EQ(o.gpu_model, "A100");
    }
  }
  EXPECT_TRUE(saw_a2);
  // a2-ultragpu (A100-80GB) and a3-ultragpu (H200) have no GPU price rows in the filtered file.
  EXPECT_FALSE(r->warnings.empty());
}

TEST_F(CatalogData, Lambda) {
  auto r = parse_skypilot_csv(read(data_dir() / "lambda_vms.csv"), "lambda");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->offers.size() + r->warnings.size(), 323u);
  auto a100 = find_offers(r->offers, "lambda", "gpu_1x_a100", "us-east-1");
  ASSERT_FALSE(a100.empty());
  EXPECT_DOUBLE_EQ(a100[0]->on_demand_usd_per_hour, 1.29);
  EXPECT_FALSE(a100[0]->spot_usd_per_hour);
  bool saw_cpu = false;
  for (const auto& o : r->offers) saw_cpu |= o.gpu_model == "cpu";
  EXPECT_TRUE(saw_cpu);
}

}  // namespace
}  // namespace jobctl::cost
