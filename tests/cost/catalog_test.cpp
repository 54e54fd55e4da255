#include <gtest/gtest.h>

#include "cost/catalog_cloud.h"
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
  for (const Fact& f : {Fact{"aws", "p3.2xlarge", "V100-16GB", 1, 3.06},
                        Fact{"aws", "p4d.24xlarge", "A100-40GB-SXM", 8, 32.7726},
                        Fact{"aws", "p5.48xlarge", "H100-SXM", 8, 98.32}, Fact{"aws", "g5.xlarge", "A10G", 1, 1.006},
                        Fact{"aws", "g4dn.xlarge", "T4", 1, 0.526},
                        Fact{"lambda", "gpu_1x_a100", "A100-40GB-PCIe", 1, 1.29},
                        Fact{"lambda", "gpu_1x_h100_pcie", "H100-PCIe", 1, 2.49},  // priced and timed as itself
                        Fact{"lambda", "gpu_8x_a100", "A100-40GB-SXM", 8, 10.32}}) {
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
  // One GPU memory per offer, the same as the imported AWS catalog's (22,888 MiB, not 24 GiB).
  EXPECT_DOUBLE_EQ(find_offers(offers, "aws", "g5.xlarge")[0]->gpu_memory_gb, 22888 / 1024.0);
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
  EXPECT_EQ(p3.gpu_model, "V100-16GB");
  EXPECT_DOUBLE_EQ(p3.gpu_memory_gb, 16);
  EXPECT_DOUBLE_EQ(*p3.spot_usd_per_hour, 0.918);
  EXPECT_EQ(p3.zone, "usw2-az2");
  const Offer& p4de = r->offers[1];
  EXPECT_EQ(p4de.gpu_model, "A100-80GB-SXM");  // "A100" with 80 GB per GPU
  EXPECT_EQ(p4de.gpu_count, 8);
  EXPECT_FALSE(p4de.spot_usd_per_hour);
  ASSERT_EQ(r->warnings.size(), 1u);  // p5e: no Price
  EXPECT_NE(r->warnings[0].find("line 4"), std::string::npos);
  EXPECT_NE(r->warnings[0].find("p5e.48xlarge"), std::string::npos);
  EXPECT_EQ(r->rows, 3);
  EXPECT_EQ(r->skipped, 1);
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
  EXPECT_EQ(a2.gpu_model, "A100-40GB-SXM");
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
  auto negative_count = parse_skypilot_csv("InstanceType,Price,Region,vCPUs\np3.2xlarge,3,us-east-1,-8\n", "aws");
  EXPECT_FALSE(negative_count);
  auto ragged = parse_skypilot_csv("InstanceType,Price,Region\np3.2xlarge,3.06\n", "aws");
  ASSERT_FALSE(ragged);
  EXPECT_EQ(ragged.error().code, ErrorCode::malformed_csv);
  EXPECT_FALSE(parse_skypilot_csv("InstanceType,Price,Region\nmy-box,3.06,us-east-1\n", ""));  // no cloud
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

// A price of zero, below zero or none is no price: such rows are skipped, and the file says so
// once (counts by kind and the first line), not once per row. A Lambda row with a SpotPrice of 0.0
// was chosen as "spot at $0.000/h"; Azure repeats Price as SpotPrice on its H100 rows.
TEST(SkypilotCsv, BadPricesAreSkippedWithOneWarningPerFile) {
  auto r = parse_skypilot_csv(
      "InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\n"
      "gpu_1x_a10,A10,1,0.75,0.0,us-east-1\n"
      "gpu_1x_a100,A100,1,0,,us-east-1\n"
      "gpu_8x_a100,A100,8,-10.32,,us-east-1\n"
      "gpu_1x_h100_pcie,H100,1,,,us-east-1\n"
      "gpu_1x_a6000,A6000,1,0.8,0.8,us-east-1\n"
      "gpu_2x_a6000,A6000,2,1.6,-1,us-east-1\n"
      "gpu_4x_a6000,A6000,4,3.2,1.1,us-east-1\n",
      "lambda");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->offers.size(), 4u);
  EXPECT_EQ(r->rows, 7);
  EXPECT_EQ(r->skipped, 3);
  for (const auto& o : r->offers) {
    EXPECT_GT(o.on_demand_usd_per_hour, 0) << o.name();
    if (o.instance_type != "gpu_4x_a6000") {
      EXPECT_FALSE(o.spot_usd_per_hour) << o.name();
    }
  }
  EXPECT_DOUBLE_EQ(*r->offers[3].spot_usd_per_hour, 1.1);
  ASSERT_EQ(r->warnings.size(), 1u);
  const std::string& w = r->warnings[0];
  EXPECT_NE(w.find("skipped 3 of 7 rows: 3 with a zero, negative or missing Price (first: line 3, gpu_1x_a100"),
            std::string::npos) << w;
  EXPECT_NE(w.find("2 with a zero or negative SpotPrice: no spot option (first: line 2, gpu_1x_a10"),
            std::string::npos) << w;
  EXPECT_NE(w.find("1 with a SpotPrice not below its Price: no spot option (first: line 6"), std::string::npos) << w;
}

TEST(SkypilotCsv, InstanceTypesCorrectWhatTheCatalogSays) {
  auto r = parse_skypilot_csv(
      "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,Generation\n"
      "Standard_ND96isr_H100_v5,H100,12,96.0,1900,H100,98.32,98.32,eastus,V2\n"
      "Standard_NC40ads_H100_v5,H100,1,40.0,320,H100,6.98,6.98,eastus,V2\n"
      "Standard_NC24ads_A100_v4,A100-80GB,1,24.0,220,A100-80GB,3.67,0.7,eastus,V2\n"
      "Standard_NV4as_v4,Radeon MI25,1,4.0,14,Radeon MI25,0.17,0.03,eastus,V2\n",
      "");  // the cloud is read from the content
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->offers.size(), 4u);
  EXPECT_EQ(r->offers[0].cloud, "azure");
  EXPECT_EQ(r->offers[0].gpu_model, "H100-SXM");
  EXPECT_EQ(r->offers[0].gpu_count, 8);  // listed with 12; the machine has 8
  EXPECT_FALSE(r->offers[0].spot_usd_per_hour);  // SpotPrice == Price: no spot market
  EXPECT_EQ(r->offers[1].gpu_model, "H100-NVL");
  EXPECT_DOUBLE_EQ(r->offers[1].gpu_memory_gb, 94);
  EXPECT_EQ(r->offers[2].gpu_model, "A100-80GB-PCIe");
  EXPECT_EQ(r->offers[3].gpu_model, "Radeon MI25");  // unknown: listed, never chosen
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("12 H100 listed, 8 in the machine"), std::string::npos) << r->warnings[0];
  EXPECT_NE(r->warnings[0].find("Radeon MI25"), std::string::npos) << r->warnings[0];
}

TEST(CatalogCloud, ReadFromTheContent) {
  EXPECT_EQ(cloud_of_row("p3.2xlarge", "use1-az1"), "aws");
  EXPECT_EQ(cloud_of_row("a2-highgpu-1g", "us-central1-a"), "gcp");
  EXPECT_EQ(cloud_of_row("", "us-central1-a"), "gcp");  // a GCP GPU price row
  EXPECT_EQ(cloud_of_row("gpu_1x_a100", ""), "lambda");
  EXPECT_EQ(cloud_of_row("cpu_4x_general", ""), "lambda");
  EXPECT_EQ(cloud_of_row("Standard_NC6s_v3", ""), "azure");
  EXPECT_FALSE(cloud_of_row("my-box", ""));
  EXPECT_FALSE(cloud_of_row("", ""));
  EXPECT_EQ(cloud_from_catalog_content("InstanceType,Price,Region\na2-highgpu-1g,1,us-central1\n"), "gcp");
  EXPECT_EQ(cloud_from_catalog_content("Cloud,InstanceType,Price,Region\nvast,x,1,r\n"), "vast");
  EXPECT_FALSE(cloud_from_catalog_content("InstanceType,Price,Region\nbox,1,r\n"));
  EXPECT_FALSE(cloud_from_catalog_content("\"unterminated"));
  // A GCP file under SkyPilot's own name (vms.csv): its GPU machines are GPU offers, not "cpu".
  auto gcp = parse_skypilot_csv(
      "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice\n"
      "a2-highgpu-1g,12.0,85.0,,,,us-central1,us-central1-a,0.73948,0.29576\n"
      ",,,A100,1,,us-central1,us-central1-a,2.93391,1.1472\n",
      "");
  ASSERT_TRUE(gcp) << gcp.error().message;
  ASSERT_EQ(gcp->offers.size(), 1u);
  EXPECT_EQ(gcp->offers[0].gpu_model, "A100-40GB-SXM");
  EXPECT_FALSE(parse_skypilot_csv("InstanceType,Price,Region\nbox,1,r\n", ""));  // no cloud to be found
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
