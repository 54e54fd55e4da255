#include <gtest/gtest.h>

#include "cost/csv.h"
#include "cost/price_catalog.h"

namespace jobctl::cost {
namespace {

TEST(Csv, QuotesCommasAndLineEnds) {
  auto rows = parse_csv("a,b,c\r\n1,\"x, \"\"y\"\"\",3\n# comment\n\n\"multi\nline\",,\n");
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[1].fields[1], "x, \"y\"");
  EXPECT_EQ((*rows)[1].line, 2);
  EXPECT_EQ((*rows)[2].fields[0], "multi\nline");
  EXPECT_EQ((*rows)[2].fields.size(), 3u);
  EXPECT_EQ((*rows)[2].line, 5);
  EXPECT_FALSE(parse_csv("a,\"b\n"));
  EXPECT_FALSE(parse_csv("a,\"b\"c\n"));
}

TEST(SeedCatalog, HasTheDesignFactsWithSourceAndDate) {
  const auto& offers = seed_catalog();
  ASSERT_GE(offers.size(), 10u);
  for (const auto& o : offers) {
    EXPECT_FALSE(o.source.empty()) << o.name();
    EXPECT_EQ(o.date.size(), 10u) << o.name();
    EXPECT_GT(o.on_demand_usd_per_hour, 0) << o.name();
    EXPECT_GT(o.gpu_count, 0) << o.name();
    EXPECT_GT(o.gpu_memory_gb, 0) << o.name();
  }
  struct Fact {
    const char* cloud;
    const char* type;
    const char* gpu;
    int count;
    double price;
  };
  for (const Fact& f : {Fact{"aws", "p3.2xlarge", "V100", 1, 3.06}, Fact{"aws", "p4d.24xlarge", "A100", 8, 32.7726},
                        Fact{"aws", "p5.48xlarge", "H100", 8, 98.32}, Fact{"aws", "g5.xlarge", "A10G", 1, 1.006},
                        Fact{"aws", "g4dn.xlarge", "T4", 1, 0.526}, Fact{"lambda", "gpu_1x_a100", "A100", 1, 1.29},
                        Fact{"lambda", "gpu_1x_h100_pcie", "H100", 1, 2.49},
                        Fact{"lambda", "gpu_8x_a100", "A100", 8, 10.32}}) {
    auto found = find_offers(offers, f.cloud, f.type);
    ASSERT_EQ(found.size(), 1u) << f.type;
    EXPECT_EQ(found[0]->gpu_model, f.gpu) << f.type;
    EXPECT_EQ(found[0]->gpu_count, f.count) << f.type;
    EXPECT_DOUBLE_EQ(found[0]->on_demand_usd_per_hour, f.price) << f.type;
  }
  // Spot is 60-90% below on-demand where a spot market exists.
  for (const auto& o : offers) {
    if (!o.spot_usd_per_hour) continue;
    EXPECT_LT(*o.spot_usd_per_hour, 0.7 * o.on_demand_usd_per_hour) << o.name();
  }
  EXPECT_FALSE(find_offers(offers, "lambda", "gpu_1x_a100")[0]->spot_usd_per_hour.has_value());
  EXPECT_EQ(find_offers(offers, "AWS", "p3.2xlarge").size(), 1u);  // cloud is case-insensitive
}

TEST(SkypilotCsv, ParsesByHeaderName) {
  // Columns in a different order than AWS's; quoted GpuInfo with commas; an empty SpotPrice.
  const char* csv =
      "Region,Price,InstanceType,GpuInfo,AcceleratorCount,AcceleratorName,SpotPrice,AvailabilityZone\n"
      "us-west-2,3.06,p3.2xlarge,\"{'Gpus': [{'Name': 'V100', 'MemoryInfo': {'SizeInMiB': 16384}}]}\",1.0,V100,0.918,usw2-az2\n"
      "us-west-2,32.7726,p4de.24xlarge,\"{'Gpus': [{'MemoryInfo': {'SizeInMiB': 81920}}]}\",8.0,A100,,usw2-az1\n"
      "us-west-2,,p5e.48xlarge,,8.0,H200,,usw2-az1\n";
  auto r = parse_skypilot_csv(csv, "aws");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->offers.size(), 2u);
  const Offer& p3 = r->offers[0];
  EXPECT_EQ(p3.cloud, "aws");
  EXPECT_EQ(p3.name(), "aws:p3.2xlarge");
  EXPECT_EQ(p3.gpu_model, "V100");
  EXPECT_DOUBLE_EQ(p3.gpu_memory_gb, 16);
  EXPECT_DOUBLE_EQ(*p3.spot_usd_per_hour, 0.918);
  EXPECT_EQ(p3.zone, "usw2-az2");
  const Offer& p4de = r->offers[1];
  EXPECT_EQ(p4de.gpu_model, "A100-80GB");  // "A100" with 80 GB per GPU
  EXPECT_EQ(p4de.gpu_count, 8);
  EXPECT_FALSE(p4de.spot_usd_per_hour);
  ASSERT_EQ(r->warnings.size(), 1u);  // p5e: no Price
  EXPECT_NE(r->warnings[0].find("line 4"), std::string::npos);
  EXPECT_NE(r->warnings[0].find("p5e.48xlarge"), std::string::npos);
}

TEST(SkypilotCsv, GcpHostPlusGpu) {
  const char* csv =
      "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice\n"
      "a2-highgpu-1g,12.0,85.0,,,,us-central1,us-central1-a,0.73948,0.29576\n"
      "a2-ultragpu-1g,12.0,170.0,,,,us-central1,us-central1-a,1.09962,0.43983\n"
      "g2-standard-24,24.0,96.0,,,,us-central1,us-central1-a,0.5,0.2\n"
      ",,,A100,1,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 40960}}]},us-central1,us-central1-a,2.93391,1.1472\n"
      ",,,L4,2,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 24576}}]},us-central1,us-central1-a,1.12,\n"
      ",,,T4,1,{'Gpus': [{'MemoryInfo': {'SizeInMiB': 16384}}]},us-central1,us-central1-a,0.35,0.14\n";
  auto r = parse_skypilot_csv(csv, "gcp");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->offers.size(), 2u);
  const Offer& a2 = r->offers[0];
  EXPECT_EQ(a2.instance_type, "a2-highgpu-1g");
  EXPECT_EQ(a2.gpu_model, "A100");
  EXPECT_EQ(a2.gpu_count, 1);
  EXPECT_NEAR(a2.on_demand_usd_per_hour, 0.73948 + 2.93391, 1e-12);
  EXPECT_NEAR(*a2.spot_usd_per_hour, 0.29576 + 1.1472, 1e-12);
  const Offer& g2 = r->offers[1];
  EXPECT_EQ(g2.gpu_model, "L4");
  EXPECT_EQ(g2.gpu_count, 2);
  EXPECT_NEAR(g2.on_demand_usd_per_hour, 1.62, 1e-12);
  EXPECT_FALSE(g2.spot_usd_per_hour);  // the GPU has no spot price
  ASSERT_EQ(r->warnings.size(), 1u);  // a2-ultragpu-1g: no A100-80GB price row
  EXPECT_NE(r->warnings[0].find("a2-ultragpu-1g"), std::string::npos);
}

TEST(SkypilotCsv, CpuInstancesBecomeCpuOffers) {
  auto r = parse_skypilot_csv(
      "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\r\n"
      "cpu_4x_general,,,4.0,16.0,0.2,us-east-1,,\r\n",
      "lambda");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->offers.size(), 1u);
  EXPECT_EQ(r->offers[0].gpu_model, "cpu");
  EXPECT_EQ(r->offers[0].gpu_count, 1);
  EXPECT_DOUBLE_EQ(r->offers[0].gpu_memory_gb, 16);
  EXPECT_EQ(r->offers[0].zone, "");
}

TEST(SkypilotCsv, ErrorsNameLineAndColumn) {
  auto missing = parse_skypilot_csv("InstanceType,Region\np3.2xlarge,us-east-1\n", "aws");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().field, "Price");
  auto bad_number = parse_skypilot_csv("InstanceType,Price,Region\np3.2xlarge,cheap,us-east-1\n", "aws");
  ASSERT_FALSE(bad_number);
  EXPECT_EQ(bad_number.error().field, "Price");
  EXPECT_NE(bad_number.error().message.find("line 2"), std::string::npos);
  auto negative = parse_skypilot_csv("InstanceType,Price,Region\np3.2xlarge,-3,us-east-1\n", "aws");
  EXPECT_FALSE(negative);
  auto ragged = parse_skypilot_csv("InstanceType,Price,Region\np3.2xlarge,3.06\n", "aws");
  ASSERT_FALSE(ragged);
  EXPECT_EQ(ragged.error().code, ErrorCode::malformed_csv);
  EXPECT_FALSE(parse_skypilot_csv("InstanceType,Price,Region\np3.2xlarge,3.06,us-east-1\n", ""));
  EXPECT_FALSE(parse_skypilot_csv("", "aws"));
}

// Found by fuzz_catalog_csv: a count of 1e39 overflowed the conversion to int (undefined behaviour).
TEST(SkypilotCsv, AcceleratorCountMustBeAWholeBoundedNumber) {
  const char* header = "InstanceType,AcceleratorName,AcceleratorCount,Price,Region\n";
  for (const char* count : {"1e39", "0.5", "0", "4097"}) {
    const std::string csv = std::string(header) + "p3.2xlarge,V100," + count + ",3.06,us-east-1\n" +
                            "p3.8xlarge,V100,4.0,12.24,us-east-1\n";
    auto r = parse_skypilot_csv(csv, "aws");
    ASSERT_TRUE(r) << count << ": " << r.error().message;
    ASSERT_EQ(r->offers.size(), 1u) << count;  // the bad row is skipped, the good one kept
    EXPECT_EQ(r->offers[0].gpu_count, 4);
    ASSERT_EQ(r->warnings.size(), 1u) << count;
    EXPECT_NE(r->warnings[0].find("AcceleratorCount"), std::string::npos) << r->warnings[0];
    EXPECT_NE(r->warnings[0].find("line 2"), std::string::npos) << r->warnings[0];
  }
  // The same bound holds for a GCP accelerator row.
  auto gcp = parse_skypilot_csv(std::string(header) + ",T4,1e39,0.35,us-central1\n", "gcp");
  ASSERT_TRUE(gcp);
  EXPECT_EQ(gcp->warnings.size(), 1u);
  // An infinite price is not a price.
  auto inf = parse_skypilot_csv("InstanceType,Price,Region\np3.2xlarge,inf,us-east-1\n", "aws");
  ASSERT_FALSE(inf);
  EXPECT_EQ(inf.error().field, "Price");
}

TEST(OfferRef, Parses) {
  auto r = parse_offer_ref("AWS:p3.2xlarge");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, "aws");
  EXPECT_EQ(r->second, "p3.2xlarge");
  EXPECT_FALSE(parse_offer_ref("p3.2xlarge"));
  EXPECT_FALSE(parse_offer_ref("aws:"));
  EXPECT_EQ(parse_offer_ref(":x").error().field, "offer");
}

}  // namespace
}  // namespace jobctl::cost
