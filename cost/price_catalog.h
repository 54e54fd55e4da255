// The price catalog: every way to rent a machine — (cloud, instance type, region/zone, GPU model,
// GPU count, memory, on-demand $/h, spot $/h).
//
// Two sources, one parser:
//  - the built-in seed catalog (cost/seed_catalog.csv, embedded at build time; every row names its
//    source and date), always available;
//  - SkyPilot catalog CSVs (skypilot-org/skypilot-catalog, catalogs/v7), which the daemon or the
//    CLI reads from disk or fetches and hands over as text. Columns are found by header name, since
//    their order differs per cloud.
//
// What the reader does with imperfect rows (docs/cost-model.md, "The price catalog"):
//  - a row with a zero, negative or missing Price is skipped; so is a row with an AcceleratorCount
//    that is not a whole number of GPUs. A number that does not parse at all makes the file
//    malformed (an error naming the line and column).
//  - a SpotPrice that is empty, zero, negative or not below the row's Price is no spot market:
//    the offer has no spot option (Azure repeats Price as SpotPrice on every H100 row).
//  - the GPU is identified once per row (cost::identify_gpu) from AcceleratorName, corrected by
//    what the cloud documents for the instance type (cost/instance_gpus.h: Lambda's H100 PCIe,
//    Azure's H100 NVL and A100 PCIe rows, Azure's Standard_ND96isr_H100_v5 listed with 12 GPUs
//    but built with 8). A GPU the table does not know is kept under its catalog name (placement
//    rejects it as unknown_gpu).
//  - one GPU memory per offer: the catalog's own figure (GpuMemoryMiB, GpuMemoryGiB, or GpuInfo's
//    SizeInMiB), else the variant's; it is what the VRAM estimate is held to.
// Rows skipped or changed are reported as one warning per file: counts by kind and the first
// line of each.
//
// GCP bills a GPU apart from its host VM: its files hold host rows (a2-*, a3-*, g2-*) with the host
// price and GPU rows (empty InstanceType) with the accelerator price per zone. An offer for a GCP
// GPU family is host + GPU, with the GPU model and count implied by the family name; a family whose
// GPU price row is missing (e.g. A100-80GB, H200 in the filtered files) is skipped. GPU rows alone
// (T4/V100 attached to N1 hosts) are not offers: the N1 host price is not in them.
//
// Thread safety: parse_* are pure; seed_catalog() parses once, thread-safely, and then only reads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/expected.h"

namespace jobctl::cost {

struct Offer {
  std::string cloud;           // "aws", "gcp", "lambda", ...
  std::string instance_type;   // "p3.2xlarge"
  std::string region;          // "us-east-1"
  std::string zone;            // "use1-az1"; empty where the catalog has none
  std::string gpu_model;       // the variant's canonical name (identify_gpu); "cpu" for CPU-only
                               // instances; the catalog's name for a GPU the table does not know
  int gpu_count = 0;           // GPUs per instance (1 for a CPU-only instance: one "cpu" device)
  double gpu_memory_gb = 0;    // per GPU, GiB (host memory for a CPU-only instance)
  double vcpus = 0;
  double memory_gb = 0;        // host memory
  double on_demand_usd_per_hour = 0;
  std::optional<double> spot_usd_per_hour;  // absent: no spot market for this row
  std::string source;          // where the price comes from
  std::string date;            // when it was recorded (YYYY-MM-DD); may be empty

  // "cloud:instance_type" — what `--offer` and the candidate table name.
  std::string name() const { return cloud + ":" + instance_type; }
};

struct CatalogImport {
  std::vector<Offer> offers;
  // At most one: what was skipped or changed, counted by kind with the first line of each
  // ("skipped 1 of 430 rows: 1 with a zero, negative or missing Price (first: line 412, ...)").
  std::vector<std::string> warnings;
  int rows = 0;     // machine rows read (GCP's GPU price rows excluded)
  int skipped = 0;  // of them, not made offers
};

// Parses a catalog CSV in the SkyPilot format. `cloud` names the cloud of every row unless the
// file has a Cloud column; empty: read from the content (cost/catalog_cloud.h). `source` is
// recorded on offers whose row has no Source column. Required columns: InstanceType, Price,
// Region. Errors: "malformed_csv" (bad quoting, a row with the wrong number of fields),
// "invalid_argument" (a missing column, a number that does not parse, no cloud) — each naming the
// line and column.
[[nodiscard]] Expected<CatalogImport> parse_skypilot_csv(std::string_view csv_text,
                                                         std::string_view cloud,
                                                         std::string_view source = {});

// The cloud a catalog file is named after: "aws_gpu_vms.csv" -> "aws"; "lambda.csv" -> "lambda".
std::string cloud_from_file_name(std::string_view path);

// The built-in catalog, its text and its offers.
std::string_view seed_catalog_csv();
const std::vector<Offer>& seed_catalog();

// Splits "CLOUD:INSTANCE" (e.g. "aws:p3.2xlarge"). Errors: "invalid_argument".
[[nodiscard]] Expected<std::pair<std::string, std::string>> parse_offer_ref(std::string_view ref);

// The offers of one instance type (case-insensitive cloud), optionally in one region, cheapest
// on-demand first. Pointers into `offers`.
std::vector<const Offer*> find_offers(const std::vector<Offer>& offers, std::string_view cloud,
                                      std::string_view instance_type,
                                      std::string_view region = {});

}  // namespace jobctl::cost
