// The SkyPilot catalogs in ../shared/data/catalog (real files, read-only). Skips when absent (fails
// under CI=true: tests/support/shared_data.h).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "cost/catalog_cloud.h"
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
  // 430 rows; the rows with an empty Price (p5e.48xlarge) are skipped, reported in one warning.
  EXPECT_EQ(r->rows, 430);
  EXPECT_EQ(static_cast<int>(r->offers.size()) + r->skipped, 430);
  EXPECT_GT(r->offers.size(), 400u);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("missing Price (first: line"), std::string::npos) << r->warnings[0];
  EXPECT_NE(r->warnings[0].find("p5e.48xlarge"), std::string::npos) << r->warnings[0];
  std::set<std::string> gpus;
  bool saw_p3 = false, saw_no_spot = false;
  for (const auto& o : r->offers) {
    gpus.insert(o.gpu_model);
    EXPECT_GT(o.on_demand_usd_per_hour, 0);
    EXPECT_GT(o.gpu_memory_gb, 0) << o.name();
    if (o.instance_type == "p3.2xlarge" && o.region == "us-east-1") {
      saw_p3 = true;
      EXPECT_DOUBLE_EQ(o.on_demand_usd_per_hour, 3.06);
      EXPECT_EQ(o.gpu_model, "V100-16GB");
    }
    if (!o.spot_usd_per_hour) saw_no_spot = true;
    if (o.instance_type == "p4de.24xlarge") {
      EXPECT_EQ(o.gpu_model, "A100-80GB-SXM");
    }
    if (o.instance_type == "g5.xlarge") {
      EXPECT_DOUBLE_EQ(o.gpu_memory_gb, 22888 / 1024.0);  // the catalog's MiB, as the seed catalog's
    }
    if (o.spot_usd_per_hour) {
      EXPECT_GT(*o.spot_usd_per_hour, 0) << o.name();
      EXPECT_LT(*o.spot_usd_per_hour, o.on_demand_usd_per_hour) << o.name();
    }
  }
  EXPECT_TRUE(saw_p3);
  EXPECT_TRUE(saw_no_spot);
  for (const char* g : {"T4", "A10G", "L4", "L40S", "V100-16GB", "V100-32GB", "A100-40GB-SXM", "A100-80GB-SXM",
                        "H100-SXM", "H200"})
    EXPECT_TRUE(gpus.count(g)) << g;
}

TEST_F(CatalogData, Gcp) {
  // The cloud is read from the content (SkyPilot's own files are all named vms.csv).
  auto r = parse_skypilot_csv(read(data_dir() / "gcp_gpu_vms.csv"), "");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_FALSE(r->offers.empty());
  bool saw_a2 = false;
  for (const auto& o : r->offers) {
    EXPECT_NE(o.gpu_model, "cpu") << o.name();
    if (o.instance_type == "a2-highgpu-1g" && o.zone == "us-central1-a") {
      saw_a2 = true;
      EXPECT_NEAR(o.on_demand_usd_per_hour, 0.73948 + 2.93391, 1e-9);
      EXPECT_EQ(o.gpu_model, "A100-40GB-SXM");
    }
  }
  EXPECT_TRUE(saw_a2);
  EXPECT_EQ(r->offers.front().cloud, "gcp");
  // a2-ultragpu (A100-80GB) and a3-ultragpu (H200) have no GPU price rows in the filtered file.
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("GCP machines whose GPUs have no price row"), std::string::npos) << r->warnings[0];
}

TEST_F(CatalogData, Lambda) {
  auto r = parse_skypilot_csv(read(data_dir() / "lambda_vms.csv"), "lambda");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rows, 323);
  EXPECT_EQ(static_cast<int>(r->offers.size()) + r->skipped, 323);
  auto pcie = find_offers(r->offers, "lambda", "gpu_1x_h100_pcie");
  ASSERT_FALSE(pcie.empty());
  EXPECT_EQ(pcie[0]->gpu_model, "H100-PCIe");  // priced and timed as itself, not as an SXM
  EXPECT_EQ(find_offers(r->offers, "lambda", "gpu_1x_h100_sxm5")[0]->gpu_model, "H100-SXM");
  auto a100 = find_offers(r->offers, "lambda", "gpu_1x_a100", "us-east-1");
  ASSERT_FALSE(a100.empty());
  EXPECT_DOUBLE_EQ(a100[0]->on_demand_usd_per_hour, 1.29);
  EXPECT_FALSE(a100[0]->spot_usd_per_hour);
  bool saw_cpu = false;
  for (const auto& o : r->offers) saw_cpu |= o.gpu_model == "cpu";
  EXPECT_TRUE(saw_cpu);
}

// Azure (150 GPU rows) and its oddities (docs/cost-model.md, "The price catalog"): every H100 row
// repeats Price as SpotPrice (no spot option), Standard_ND96isr_H100_v5 says 12 H100 (8 in the
// machine), the Promo K80 rows have no SpotPrice, the centralus H100 rows come last (order does not
// matter), the Radeon MI25 rows name a GPU jobctl cannot run (listed, never chosen).
TEST_F(CatalogData, Azure) {
  const std::string text = read(data_dir() / "azure_gpu_vms.csv");
  EXPECT_EQ(cloud_from_catalog_content(text), "azure");
  auto r = parse_skypilot_csv(text, "");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->rows, 150);
  EXPECT_EQ(r->skipped, 0);
  EXPECT_EQ(r->offers.size(), 150u);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("SpotPrice not below its Price"), std::string::npos) << r->warnings[0];
  EXPECT_NE(r->warnings[0].find("12 H100 listed, 8 in the machine"), std::string::npos) << r->warnings[0];
  std::map<std::string, int> nvl_regions;
  bool saw_nd_h100 = false, saw_centralus_h100 = false, saw_promo = false;
  for (const auto& o : r->offers) {
    EXPECT_EQ(o.cloud, "azure");
    if (o.gpu_model.starts_with("H100")) {
      EXPECT_FALSE(o.spot_usd_per_hour) << o.name() << " " << o.region;
      saw_centralus_h100 |= o.region == "centralus";
    }
    if (o.instance_type == "Standard_ND96isr_H100_v5") {
      saw_nd_h100 = true;
      EXPECT_EQ(o.gpu_count, 8);
      EXPECT_EQ(o.gpu_model, "H100-SXM");
    }
    if (o.instance_type == "Standard_NC40ads_H100_v5") {
      ++nvl_regions[o.region];
      EXPECT_EQ(o.gpu_model, "H100-NVL");
    }
    if (o.instance_type.starts_with("Standard_NC24ads_A100")) {
      EXPECT_EQ(o.gpu_model, "A100-80GB-PCIe");
    }
    if (o.instance_type.ends_with("_Promo")) {
      saw_promo = true;
      EXPECT_FALSE(o.spot_usd_per_hour) << o.name();
    }
    if (o.instance_type == "Standard_NV4as_v4") {
      EXPECT_EQ(o.gpu_model, "Radeon MI25");
    }
  }
  EXPECT_TRUE(saw_nd_h100);
  EXPECT_TRUE(saw_centralus_h100);
  EXPECT_TRUE(saw_promo);
  EXPECT_EQ(nvl_regions.size(), 5u);
}

// Every shared catalog says which cloud it is by its content alone.
TEST_F(CatalogData, CloudFromContent) {
  for (const char* cloud : {"aws", "gcp", "lambda", "azure"}) {
    const std::string file = std::string(cloud) + (std::string(cloud) == "lambda" ? "_vms.csv" : "_gpu_vms.csv");
    EXPECT_EQ(cloud_from_catalog_content(read(data_dir() / file)), cloud) << file;
  }
}

}  // namespace
}  // namespace jobctl::cost
