#include "cost/price_catalog.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <tuple>

#include "base/strings.h"
#include "cost/csv.h"
#include "cost/gpu_specs.h"

namespace jobctl::cost {

namespace detail {
extern const std::string_view kSeedCatalogCsv;  // generated from seed_catalog.csv
}

namespace {

// The most GPUs one catalog row may name (the largest real instances have 16).
constexpr int kMaxAcceleratorCount = 4096;

// A number, or nullopt for an empty field; an error for anything else.
Expected<std::optional<double>> parse_number(std::string_view text, int line, std::string_view column) {
  text = trim(text);
  if (text.empty()) return std::optional<double>{};
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !(v >= 0) || !std::isfinite(v))
    return make_error(ErrorCode::invalid_argument,
                      "line " + std::to_string(line) + ": " + std::string(column) + " is not a " +
                          "finite non-negative number: '" + std::string(text) + "'",
                      std::string(column));
  return std::optional<double>{v};
}

// Per-GPU memory from a SkyPilot GpuInfo cell: "{'Gpus': [{... 'MemoryInfo': {'SizeInMiB': 16384}}]
// ...}" — a Python literal, not JSON, so it is searched rather than parsed.
std::optional<double> gpu_memory_from_info(std::string_view info) {
  const auto at = info.find("SizeInMiB");
  if (at == std::string_view::npos) return std::nullopt;
  size_t i = info.find(':', at);
  if (i == std::string_view::npos) return std::nullopt;
  ++i;
  while (i < info.size() && std::isspace(static_cast<unsigned char>(info[i]))) ++i;
  double mib = 0;
  auto [ptr, ec] = std::from_chars(info.data() + i, info.data() + info.size(), mib);
  if (ec != std::errc() || mib <= 0) return std::nullopt;
  return mib / 1024.0;
}

struct FamilyGpu {
  std::string accelerator;  // as GCP's GPU rows name it
  int count = 0;
};

int trailing_gpu_count(std::string_view type) {
  // "a2-highgpu-4g" -> 4
  auto dash = type.rfind('-');
  if (dash == std::string_view::npos) return 0;
  std::string_view tail = type.substr(dash + 1);
  if (tail.empty() || tail.back() != 'g') return 0;
  tail.remove_suffix(1);
  int n = 0;
  auto [ptr, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), n);
  if (ec != std::errc() || ptr != tail.data() + tail.size()) return 0;
  return n;
}

// The GPUs a GCP machine family carries (GCP's machine-type documentation).
std::optional<FamilyGpu> gcp_family_gpu(std::string_view type) {
  auto starts = [&](std::string_view p) { return type.starts_with(p); };
  if (starts("a2-highgpu-") || starts("a2-megagpu-")) return FamilyGpu{"A100", trailing_gpu_count(type)};
  if (starts("a2-ultragpu-")) return FamilyGpu{"A100-80GB", trailing_gpu_count(type)};
  if (starts("a3-highgpu-")) return FamilyGpu{"H100", trailing_gpu_count(type)};
  if (starts("a3-megagpu-") || starts("a3-edgegpu-")) return FamilyGpu{"H100-MEGA", 8};
  if (starts("a3-ultragpu-")) return FamilyGpu{"H200", 8};
  if (starts("g2-standard-")) {
    int vcpus = 0;
    std::string_view tail = type.substr(std::string_view("g2-standard-").size());
    std::from_chars(tail.data(), tail.data() + tail.size(), vcpus);
    switch (vcpus) {
      case 4: case 8: case 12: case 16: case 32: return FamilyGpu{"L4", 1};
      case 24: return FamilyGpu{"L4", 2};
      case 48: return FamilyGpu{"L4", 4};
      case 96: return FamilyGpu{"L4", 8};
      default: return std::nullopt;
    }
  }
  return std::nullopt;
}

struct Columns {
  std::map<std::string, size_t> index;  // lower-cased header name -> position
  std::optional<size_t> find(std::string_view name) const {
    auto it = index.find(to_lower(name));
    if (it == index.end()) return std::nullopt;
    return it->second;
  }
};

}  // namespace

Expected<CatalogImport> parse_skypilot_csv(std::string_view csv_text, std::string_view cloud,
                                           std::string_view source) {
  auto rows = parse_csv(csv_text);
  if (!rows) return rows.error();
  if (rows->empty()) return make_error(ErrorCode::invalid_argument, "the catalog is empty (no header row)");

  Columns cols;
  const auto& header = rows->front().fields;
  for (size_t i = 0; i < header.size(); ++i) cols.index.emplace(to_lower(trim(header[i])), i);
  for (std::string_view required : {"InstanceType", "Price", "Region"}) {
    if (!cols.find(required))
      return make_error(ErrorCode::invalid_argument,
                        "the catalog has no '" + std::string(required) + "' column", std::string(required));
  }
  const auto c_cloud = cols.find("Cloud");
  if (cloud.empty() && !c_cloud)
    return make_error(ErrorCode::invalid_argument, "no cloud given and the catalog has no Cloud column", "cloud");
  const size_t c_type = *cols.find("InstanceType");
  const size_t c_price = *cols.find("Price");
  const size_t c_region = *cols.find("Region");
  const auto c_zone = cols.find("AvailabilityZone");
  const auto c_acc = cols.find("AcceleratorName");
  const auto c_count = cols.find("AcceleratorCount");
  const auto c_vcpus = cols.find("vCPUs");
  const auto c_mem = cols.find("MemoryGiB");
  const auto c_gpuinfo = cols.find("GpuInfo");
  const auto c_gpumem = cols.find("GpuMemoryGiB");
  const auto c_spot = cols.find("SpotPrice");
  const auto c_source = cols.find("Source");
  const auto c_date = cols.find("Date");

  CatalogImport out;
  // GCP accelerator rows: (accelerator, count, zone or region) -> (price, spot price).
  using GpuKey = std::tuple<std::string, int, std::string>;
  std::map<GpuKey, std::pair<double, std::optional<double>>> gpu_prices;
  struct Pending {
    Offer offer;
    FamilyGpu family;
    int line;
  };
  std::vector<Pending> gcp_hosts;

  for (size_t r = 1; r < rows->size(); ++r) {
    const auto& row = (*rows)[r];
    const int line = row.line;
    if (row.fields.size() != header.size())
      return make_error(ErrorCode::malformed_csv, "line " + std::to_string(line) + " has " +
                                             std::to_string(row.fields.size()) + " fields; the header has " +
                                             std::to_string(header.size()));
    auto field = [&](std::optional<size_t> c) -> std::string_view {
      return c ? trim(row.fields[*c]) : std::string_view{};
    };
    auto number = [&](std::optional<size_t> c, std::string_view name) -> Expected<std::optional<double>> {
      if (!c) return std::optional<double>{};
      return parse_number(row.fields[*c], line, name);
    };

    Offer o;
    o.cloud = to_lower(c_cloud && !field(c_cloud).empty() ? field(c_cloud) : cloud);
    if (o.cloud.empty())
      return make_error(ErrorCode::invalid_argument, "line " + std::to_string(line) + ": no cloud", "Cloud");
    o.instance_type = std::string(field(c_type));
    o.region = std::string(field(c_region));
    o.zone = std::string(field(c_zone));
    o.source = c_source && !field(c_source).empty() ? std::string(field(c_source)) : std::string(source);
    o.date = std::string(field(c_date));

    auto price = number(c_price, "Price");
    if (!price) return price.error();
    auto spot = number(c_spot, "SpotPrice");
    if (!spot) return spot.error();
    auto count = number(c_count, "AcceleratorCount");
    if (!count) return count.error();
    // A GPU count is whole and bounded before it becomes an int (a fractional share, as some clouds
    // list, is not a placement target; an absurd one would overflow the conversion).
    if (*count && (**count < 1 || **count > kMaxAcceleratorCount || std::floor(**count) != **count)) {
      out.warnings.push_back("line " + std::to_string(line) + ": AcceleratorCount '" +
                             std::string(field(c_count)) + "' is not a whole number of GPUs from 1 to " +
                             std::to_string(kMaxAcceleratorCount) + "; skipped");
      continue;
    }
    auto vcpus = number(c_vcpus, "vCPUs");
    if (!vcpus) return vcpus.error();
    auto mem = number(c_mem, "MemoryGiB");
    if (!mem) return mem.error();
    auto gpumem = number(c_gpumem, "GpuMemoryGiB");
    if (!gpumem) return gpumem.error();

    const std::string accelerator(field(c_acc));
    if (o.instance_type.empty()) {
      if (accelerator.empty()) {
        out.warnings.push_back("line " + std::to_string(line) + ": no InstanceType and no AcceleratorName");
        continue;
      }
      // A GPU price row (GCP): kept to complete the host rows of its family.
      if (!*price) {
        out.warnings.push_back("line " + std::to_string(line) + ": empty Price");
        continue;
      }
      const int n = static_cast<int>(count->value_or(1.0));
      gpu_prices[{accelerator, n, o.zone.empty() ? o.region : o.zone}] = {**price, *spot};
      continue;
    }
    if (!*price) {
      out.warnings.push_back("line " + std::to_string(line) + ": " + o.instance_type + " in " +
                             (o.zone.empty() ? o.region : o.zone) + " has an empty Price; skipped");
      continue;
    }
    o.on_demand_usd_per_hour = **price;
    o.spot_usd_per_hour = *spot;
    o.vcpus = vcpus->value_or(0);
    o.memory_gb = mem->value_or(0);

    double per_gpu_memory = gpumem->value_or(0);
    if (per_gpu_memory <= 0 && c_gpuinfo) per_gpu_memory = gpu_memory_from_info(field(c_gpuinfo)).value_or(0);

    if (!accelerator.empty()) {
      o.gpu_model = canonical_gpu_name(accelerator, per_gpu_memory);
      o.gpu_count = static_cast<int>(count->value_or(1.0));
    } else if (auto fam = (o.cloud == "gcp" ? gcp_family_gpu(o.instance_type) : std::nullopt); fam && fam->count > 0) {
      gcp_hosts.push_back(Pending{std::move(o), *fam, line});
      continue;
    } else {
      o.gpu_model = "cpu";
      o.gpu_count = 1;
      per_gpu_memory = o.memory_gb;
    }
    if (per_gpu_memory <= 0) {
      if (const GpuSpec* spec = find_gpu(o.gpu_model)) per_gpu_memory = spec->memory_gb;
    }
    o.gpu_memory_gb = per_gpu_memory;
    out.offers.push_back(std::move(o));
  }

  // GCP hosts: add the price of their GPUs from the accelerator rows of the same zone.
  for (auto& p : gcp_hosts) {
    Offer& o = p.offer;
    const std::string where = o.zone.empty() ? o.region : o.zone;
    auto it = gpu_prices.find({p.family.accelerator, p.family.count, where});
    if (it == gpu_prices.end()) {
      out.warnings.push_back("line " + std::to_string(p.line) + ": " + o.instance_type + " in " + where +
                             ": no price row for its " + std::to_string(p.family.count) + " x " +
                             p.family.accelerator + "; skipped");
      continue;
    }
    o.on_demand_usd_per_hour += it->second.first;
    if (o.spot_usd_per_hour && it->second.second)
      *o.spot_usd_per_hour += *it->second.second;
    else
      o.spot_usd_per_hour.reset();
    o.gpu_model = canonical_gpu_name(p.family.accelerator);
    o.gpu_count = p.family.count;
    if (const GpuSpec* spec = find_gpu(o.gpu_model)) o.gpu_memory_gb = spec->memory_gb;
    out.offers.push_back(std::move(o));
  }
  return out;
}

std::string_view seed_catalog_csv() { return detail::kSeedCatalogCsv; }

const std::vector<Offer>& seed_catalog() {
  static const std::vector<Offer> offers = [] {
    auto parsed = parse_skypilot_csv(detail::kSeedCatalogCsv, "", "jobctl seed catalog");
    // The seed file is part of the build and tested; a parse failure is a build defect.
    if (!parsed) return std::vector<Offer>{};
    return std::move(parsed->offers);
  }();
  return offers;
}

Expected<std::pair<std::string, std::string>> parse_offer_ref(std::string_view ref) {
  const auto colon = ref.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= ref.size())
    return make_error(ErrorCode::invalid_argument,
                      "an offer is CLOUD:INSTANCE (e.g. aws:p3.2xlarge), got '" + std::string(ref) + "'",
                      "offer");
  return std::pair{to_lower(trim(ref.substr(0, colon))), std::string(trim(ref.substr(colon + 1)))};
}

std::vector<const Offer*> find_offers(const std::vector<Offer>& offers, std::string_view cloud,
                                      std::string_view instance_type, std::string_view region) {
  std::vector<const Offer*> found;
  const std::string c = to_lower(cloud);
  for (const auto& o : offers) {
    if (o.cloud == c && o.instance_type == instance_type && (region.empty() || o.region == region))
      found.push_back(&o);
  }
  std::stable_sort(found.begin(), found.end(), [](const Offer* a, const Offer* b) {
    return a->on_demand_usd_per_hour < b->on_demand_usd_per_hour;
  });
  return found;
}

std::string cloud_from_file_name(std::string_view path) {
  std::string name = std::filesystem::path(std::string(path)).stem().string();
  const size_t cut = name.find_first_of("_.-");
  if (cut != std::string::npos) name.resize(cut);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name;
}

}  // namespace jobctl::cost
