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
#include "cost/catalog_cloud.h"
#include "cost/gpu_specs.h"
#include "cost/instance_gpus.h"

namespace jobctl::cost {

namespace detail {
extern const std::string_view kSeedCatalogCsv;  // generated from seed_catalog.csv
}

namespace {

// The most GPUs one catalog row may name (the largest real instances have 16).
constexpr int kMaxAcceleratorCount = 4096;

std::string line_text(int line) { return "line " + std::to_string(line); }

// A number, or nullopt for an empty field; an error for anything else. `allow_negative`: prices,
// whose sign the caller judges (a row with a price <= 0 is skipped, not an error).
Expected<std::optional<double>> parse_number(std::string_view text, int line, std::string_view column,
                                             bool allow_negative = false) {
  text = trim(text);
  if (text.empty()) return std::optional<double>{};
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v) || (!allow_negative && v < 0))
    return make_error(ErrorCode::invalid_argument,
                      line_text(line) + ": " + std::string(column) + " is not a finite " +
                          (allow_negative ? "" : "non-negative ") + "number: '" + std::string(text) + "'",
                      std::string(column));
  return std::optional<double>{v};
}

// Per-GPU memory (GiB) from a SkyPilot GpuInfo cell: "{'Gpus': [{... 'MemoryInfo': {'SizeInMiB':
// 16384}}] ...}" — a Python literal, not JSON, so it is searched rather than parsed.
std::optional<double> gpu_memory_from_info(std::string_view info) {
  const auto at = info.find("SizeInMiB");
  if (at == std::string_view::npos) return std::nullopt;
  size_t i = info.find(':', at);
  if (i == std::string_view::npos) return std::nullopt;
  ++i;
  while (i < info.size() && std::isspace(static_cast<unsigned char>(info[i]))) ++i;
  double mib = 0;
  auto [ptr, ec] = std::from_chars(info.data() + i, info.data() + info.size(), mib);
  if (ec != std::errc() || !(mib > 0) || !std::isfinite(mib)) return std::nullopt;
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

// What happened to rows that were skipped or kept with a change, counted by kind with the first
// row of each, so that a file yields one warning however many rows it has.
class RowNotes {
 public:
  enum class What { skipped, changed, ignored };  // ignored: a GCP GPU price row left unused
  void note(What what, const std::string& kind, int line, const std::string& first) {
    if (what == What::skipped) ++skipped_;
    for (auto& e : entries_)
      if (e.kind == kind && e.what == what) {
        ++e.count;
        return;
      }
    entries_.push_back(Entry{kind, 1, line, first, what});
  }
  int skipped_rows() const { return skipped_; }

  std::optional<std::string> summary(int rows) const {
    if (entries_.empty()) return std::nullopt;
    std::string out;
    for (What what : {What::skipped, What::changed, What::ignored}) {
      std::string part;
      for (const auto& e : entries_) {
        if (e.what != what) continue;
        part += (part.empty() ? "" : "; ") + std::to_string(e.count) + " " + e.kind + " (first: " +
                line_text(e.first_line) + ", " + e.first + ")";
      }
      if (part.empty()) continue;
      if (!out.empty()) out += "; ";
      switch (what) {
        case What::skipped: out += "skipped " + std::to_string(skipped_) + " of " + std::to_string(rows) + " rows: "; break;
        case What::changed: out += "kept with a change: "; break;
        case What::ignored: out += "ignored GPU price rows: "; break;
      }
      out += part;
    }
    return out;
  }

 private:
  struct Entry {
    std::string kind;
    int count = 0;
    int first_line = 0;
    std::string first;
    What what = What::skipped;
  };
  std::vector<Entry> entries_;
  int skipped_ = 0;
};

// A spot price is a spot market only when it is positive and below the on-demand price (Azure's
// catalog repeats Price as SpotPrice where it has no spot figure, e.g. every H100 row).
void judge_spot(Offer& o, int line, RowNotes& notes) {
  if (!o.spot_usd_per_hour) return;
  const std::string what = o.instance_type + " in " + (o.zone.empty() ? o.region : o.zone);
  if (!(*o.spot_usd_per_hour > 0)) {
    notes.note(RowNotes::What::changed, "with a zero or negative SpotPrice: no spot option", line, what);
    o.spot_usd_per_hour.reset();
  } else if (*o.spot_usd_per_hour >= o.on_demand_usd_per_hour) {
    notes.note(RowNotes::What::changed, "with a SpotPrice not below its Price: no spot option", line, what);
    o.spot_usd_per_hour.reset();
  }
}

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
  std::string file_cloud = to_lower(trim(cloud));
  if (file_cloud.empty() && !c_cloud) {
    auto detected = cloud_from_catalog_content(csv_text);
    if (!detected)
      return make_error(ErrorCode::invalid_argument,
                        "no cloud given, no Cloud column, and the instance types name no known cloud", "cloud");
    file_cloud = *detected;
  }
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
  const auto c_gpumem_mib = cols.find("GpuMemoryMiB");
  const auto c_spot = cols.find("SpotPrice");
  const auto c_source = cols.find("Source");
  const auto c_date = cols.find("Date");

  CatalogImport out;
  RowNotes notes;
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
      return make_error(ErrorCode::malformed_csv, line_text(line) + " has " + std::to_string(row.fields.size()) +
                                                      " fields; the header has " + std::to_string(header.size()));
    auto field = [&](std::optional<size_t> c) -> std::string_view {
      return c ? trim(row.fields[*c]) : std::string_view{};
    };
    auto number = [&](std::optional<size_t> c, std::string_view name, bool allow_negative = false)
        -> Expected<std::optional<double>> {
      if (!c) return std::optional<double>{};
      return parse_number(row.fields[*c], line, name, allow_negative);
    };

    Offer o;
    o.cloud = c_cloud && !field(c_cloud).empty() ? to_lower(field(c_cloud)) : file_cloud;
    if (o.cloud.empty())
      return make_error(ErrorCode::invalid_argument, line_text(line) + ": no cloud", "Cloud");
    o.instance_type = std::string(field(c_type));
    o.region = std::string(field(c_region));
    o.zone = std::string(field(c_zone));
    o.source = c_source && !field(c_source).empty() ? std::string(field(c_source)) : std::string(source);
    o.date = std::string(field(c_date));
    const std::string where = o.zone.empty() ? o.region : o.zone;
    const std::string accelerator(field(c_acc));
    // A GPU price row (GCP) completes host rows; it is no machine of its own.
    const bool gpu_price_row = o.instance_type.empty() && !accelerator.empty();
    if (!gpu_price_row) ++out.rows;
    const RowNotes::What drop = gpu_price_row ? RowNotes::What::ignored : RowNotes::What::skipped;

    auto price = number(c_price, "Price", true);
    if (!price) return price.error();
    auto spot = number(c_spot, "SpotPrice", true);
    if (!spot) return spot.error();
    auto count = number(c_count, "AcceleratorCount");
    if (!count) return count.error();
    // A GPU count is whole and bounded before it becomes an int (a fractional share, as some clouds
    // list, is not a placement target; an absurd one would overflow the conversion).
    if (*count && (**count < 1 || **count > kMaxAcceleratorCount || std::floor(**count) != **count)) {
      notes.note(drop, "with an AcceleratorCount that is not a whole number of GPUs from 1 to " +
                           std::to_string(kMaxAcceleratorCount),
                 line, "'" + std::string(field(c_count)) + "'");
      continue;
    }
    auto vcpus = number(c_vcpus, "vCPUs");
    if (!vcpus) return vcpus.error();
    auto mem = number(c_mem, "MemoryGiB");
    if (!mem) return mem.error();
    auto gpumem = number(c_gpumem, "GpuMemoryGiB");
    if (!gpumem) return gpumem.error();
    auto gpumem_mib = number(c_gpumem_mib, "GpuMemoryMiB");
    if (!gpumem_mib) return gpumem_mib.error();

    if (!*price || !(**price > 0)) {
      notes.note(drop, "with a zero, negative or missing Price", line,
                 (gpu_price_row ? accelerator : o.instance_type) + " in " + where);
      continue;
    }
    if (gpu_price_row) {
      const int n = static_cast<int>(count->value_or(1.0));
      gpu_prices[{accelerator, n, where}] = {**price, *spot};
      continue;
    }
    if (o.instance_type.empty()) {
      notes.note(drop, "with no InstanceType and no AcceleratorName", line, "in " + where);
      continue;
    }
    o.on_demand_usd_per_hour = **price;
    o.spot_usd_per_hour = *spot;
    o.vcpus = vcpus->value_or(0);
    o.memory_gb = mem->value_or(0);

    // One GPU memory per offer: the catalog's own figure where it gives one (MiB is exact).
    double per_gpu_memory = gpumem_mib->value_or(0) / 1024.0;
    if (per_gpu_memory <= 0) per_gpu_memory = gpumem->value_or(0);
    if (per_gpu_memory <= 0 && c_gpuinfo) per_gpu_memory = gpu_memory_from_info(field(c_gpuinfo)).value_or(0);

    if (!accelerator.empty()) {
      std::string name = accelerator;
      int gpus = static_cast<int>(count->value_or(1.0));
      if (auto fact = instance_gpu_fact(o.cloud, o.instance_type)) {
        if (!fact->gpu.empty()) name = std::string(fact->gpu);
        if (fact->gpu_count > 0 && fact->gpu_count != gpus) {
          notes.note(RowNotes::What::changed,
                     "with a GPU count the machine does not have (corrected from the cloud's documentation)", line, o.instance_type + ": " + std::to_string(gpus) + " " + accelerator + " listed, " +
                                  std::to_string(fact->gpu_count) + " in the machine");
          gpus = fact->gpu_count;
        }
      }
      const GpuSpec* spec = identify_gpu(name, per_gpu_memory);
      if (!spec)
        notes.note(RowNotes::What::changed, "naming a GPU jobctl has no figures for (listed, never chosen)", line,
                   o.instance_type + ": " + accelerator);
      o.gpu_model = spec ? std::string(spec->name) : accelerator;
      o.gpu_count = gpus;
      if (per_gpu_memory <= 0 && spec) per_gpu_memory = spec->memory_gb;
    } else if (auto fam = (o.cloud == "gcp" ? gcp_family_gpu(o.instance_type) : std::nullopt); fam && fam->count > 0) {
      gcp_hosts.push_back(Pending{std::move(o), *fam, line});
      continue;
    } else {
      o.gpu_model = "cpu";
      o.gpu_count = 1;
      per_gpu_memory = o.memory_gb;
    }
    o.gpu_memory_gb = per_gpu_memory;
    judge_spot(o, line, notes);
    out.offers.push_back(std::move(o));
  }

  // GCP hosts: add the price of their GPUs from the accelerator rows of the same zone.
  for (auto& p : gcp_hosts) {
    Offer& o = p.offer;
    const std::string where = o.zone.empty() ? o.region : o.zone;
    auto it = gpu_prices.find({p.family.accelerator, p.family.count, where});
    if (it == gpu_prices.end()) {
      notes.note(RowNotes::What::skipped, "GCP machines whose GPUs have no price row", p.line,
                    o.instance_type + " in " + where + ": no price row for its " + std::to_string(p.family.count) +
                        " x " + p.family.accelerator);
      continue;
    }
    o.on_demand_usd_per_hour += it->second.first;
    if (o.spot_usd_per_hour && it->second.second)
      *o.spot_usd_per_hour += *it->second.second;
    else
      o.spot_usd_per_hour.reset();
    const GpuSpec* spec = identify_gpu(p.family.accelerator);
    o.gpu_model = spec ? std::string(spec->name) : p.family.accelerator;
    o.gpu_count = p.family.count;
    if (spec) o.gpu_memory_gb = spec->memory_gb;
    judge_spot(o, p.line, notes);
    out.offers.push_back(std::move(o));
  }
  out.skipped = notes.skipped_rows();
  if (auto summary = notes.summary(out.rows)) out.warnings.push_back(std::move(*summary));
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
