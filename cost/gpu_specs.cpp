#include "cost/gpu_specs.h"

#include "base/edit_distance.h"
#include "base/strings.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>

namespace jobctl::cost {

namespace {

constexpr std::string_view kDesign = "seed facts (docs/cost-model.md) (NVIDIA datasheets, dense)";
constexpr std::string_view kDatasheet = "NVIDIA datasheet, dense figures (no sparsity)";

// name, family, form, fp32, tf32, fp16, bf16, memory GB, bandwidth GB/s, TDP W, source.
// Each family's first row is its default variant (identify_gpu).
constexpr std::array kSpecs{
    GpuSpec{"T4", "T4", "", 8.1, 0, 65, 0, 16, 320, 70, kDesign},
    // SXM2 figures; a PCIe V100 (14 FP32 TFLOPS, 250 W) is identified as the variant of its memory.
    GpuSpec{"V100-16GB", "V100", "", 15.7, 0, 125, 0, 16, 900, 300, kDesign},
    GpuSpec{"V100-32GB", "V100", "", 15.7, 0, 125, 0, 32, 900, 300, kDatasheet},
    GpuSpec{"A100-40GB-SXM", "A100", "SXM", 19.5, 156, 312, 312, 40, 1555, 400, kDesign},
    GpuSpec{"A100-40GB-PCIe", "A100", "PCIe", 19.5, 156, 312, 312, 40, 1555, 250, kDatasheet},
    GpuSpec{"A100-80GB-SXM", "A100", "SXM", 19.5, 156, 312, 312, 80, 2039, 400, kDesign},
    GpuSpec{"A100-80GB-PCIe", "A100", "PCIe", 19.5, 156, 312, 312, 80, 1935, 300, kDatasheet},
    GpuSpec{"L4", "L4", "", 30.3, 60, 121, 121, 24, 300, 72, kDesign},
    GpuSpec{"RTX4090", "RTX4090", "", 82.6, 82.6, 165, 165, 24, 1008, 450, kDesign},
    GpuSpec{"H100-SXM", "H100", "SXM", 66.9, 494.5, 989, 989, 80, 3350, 700, kDesign},
    GpuSpec{"H100-PCIe", "H100", "PCIe", 51.2, 378, 756, 756, 80, 2000, 350,
            "NVIDIA H100 PCIe datasheet, dense figures (no sparsity)"},
    GpuSpec{"H100-NVL", "H100", "NVL", 60, 417.5, 835, 835, 94, 3900, 400,
            "NVIDIA H100 NVL datasheet (per GPU), dense figures (no sparsity)"},
    GpuSpec{"H200", "H200", "", 67, 494.5, 989, 989, 141, 4800, 700, kDesign},
    GpuSpec{"A10", "A10", "", 31.2, 62.5, 125, 125, 24, 600, 150, kDatasheet},
    // AWS's A10G (g5) is an A10 variant without a public datasheet; A10 compute figures, AWS's
    // memory (24 GB) and board power.
    GpuSpec{"A10G", "A10G", "", 31.2, 62.5, 125, 125, 24, 600, 300,
            "approximated by the NVIDIA A10 datasheet (dense); AWS g5 documentation for memory"},
    GpuSpec{"L40S", "L40S", "", 91.6, 183, 362, 362, 48, 864, 350, kDatasheet},
    GpuSpec{"A6000", "A6000", "", 38.7, 77.4, 154.8, 154.8, 48, 768, 300, kDatasheet},
    GpuSpec{"RTX6000", "RTX6000", "", 16.3, 0, 130.5, 0, 24, 672, 295, kDatasheet},
    GpuSpec{"GH200", "GH200", "", 67, 494.5, 989, 989, 96, 4000, 700, kDatasheet},
    GpuSpec{"B200", "B200", "", 75, 1125, 2250, 2250, 180, 7700, 1000,
            "NVIDIA HGX B200 datasheet: the 8-GPU figures / 8, tensor figures dense (sparse / 2)"},
    GpuSpec{"GB200", "GB200", "", 80, 1250, 2500, 2500, 186, 8000, 1200,
            "NVIDIA GB200 NVL72 datasheet: the 72-GPU figures / 72, tensor figures dense (sparse / 2)"},
    GpuSpec{"RTX3090", "RTX3090", "", 35.6, 35.6, 71, 71, 24, 936, 350,
            "NVIDIA Ampere GA102 whitepaper, GeForce RTX 3090, tensor FLOPS with FP32 accumulate, dense"},
    GpuSpec{"RTX5090", "RTX5090", "", 104.8, 104.8, 209.5, 209.5, 32, 1792, 575,
            "NVIDIA RTX Blackwell whitepaper, GeForce RTX 5090, tensor FLOPS with FP32 accumulate, dense"},
    GpuSpec{"A4000", "A4000", "", 19.2, 38.4, 76.7, 76.7, 16, 448, 140, "NVIDIA RTX A4000 datasheet, dense (sparse / 2)"},
    GpuSpec{"A5000", "A5000", "", 27.8, 55.6, 111.1, 111.1, 24, 768, 230, "NVIDIA RTX A5000 datasheet, dense (sparse / 2)"},
    GpuSpec{"RTX6000-Ada", "RTX6000-Ada", "", 91.1, 182.1, 364.2, 364.2, 48, 960, 300,
            "NVIDIA RTX 6000 Ada Generation datasheet, dense (sparse / 2)"},
    GpuSpec{"MI300X", "MI300X", "", 163.4, 653.7, 1307.4, 1307.4, 192, 5300, 750,
            "AMD Instinct MI300X datasheet, dense matrix figures (FP32: matrix)"},
    GpuSpec{"MI325X", "MI325X", "", 163.4, 653.7, 1307.4, 1307.4, 256, 6000, 1000,
            "AMD Instinct MI325X datasheet, dense matrix figures (FP32: matrix)"},
    // One GK210 die of a K80 board (AWS p2 and Azure NC count dies as GPUs).
    GpuSpec{"K80", "K80", "", 4.37, 0, 0, 0, 12, 240, 150, "NVIDIA K80 datasheet, per GK210 die (boost)"},
    // One GM204 of a Tesla M60 board (Azure NV counts them as GPUs).
    GpuSpec{"M60", "M60", "", 4.8, 0, 0, 0, 8, 160, 150, "NVIDIA Tesla M60 datasheet, per GPU (boost)"},
    GpuSpec{"cpu", "cpu", "", 0.5, 0, 0, 0, 0, 50, 150,
            "jobctl assumption: a multi-core AVX2 server CPU; the worker's own cores replace it (cost/cpu_peak.h)"},
};

// Other spellings of a family (tokenised like any name).
struct FamilyAlias {
  std::string_view spelling;
  std::string_view family;
};
constexpr std::array kFamilyAliases{
    FamilyAlias{"4090", "RTX4090"},
    FamilyAlias{"RTX A6000", "A6000"},
    FamilyAlias{"3090", "RTX3090"},
    FamilyAlias{"5090", "RTX5090"},
    FamilyAlias{"RTX A4000", "A4000"},
    FamilyAlias{"RTX A5000", "A5000"},
    FamilyAlias{"RTX 6000 Ada Generation", "RTX6000-Ada"},
};

using Tokens = std::vector<std::string>;

// Maximal runs of letters or of digits, lower-cased; leading vendor words dropped.
Tokens tokenise(std::string_view text) {
  Tokens out;
  std::string cur;
  int cur_class = 0;  // 1 letters, 2 digits
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    const int k = std::isalpha(u) ? 1 : std::isdigit(u) ? 2 : 0;
    if (k != cur_class && !cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
    cur_class = k;
    if (k) cur.push_back(static_cast<char>(std::tolower(u)));
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  size_t drop = 0;
  while (drop + 1 < out.size() &&
         (out[drop] == "nvidia" || out[drop] == "tesla" || out[drop] == "geforce" || out[drop] == "quadro" ||
          out[drop] == "amd" || out[drop] == "instinct"))
    ++drop;
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(drop));
  return out;
}

std::string joined(const Tokens& t) {
  std::string s;
  for (const auto& x : t) s += x;
  return s;
}

struct FamilyKey {
  Tokens tokens;
  std::string_view family;
};

const std::vector<FamilyKey>& family_keys() {
  static const std::vector<FamilyKey> keys = [] {
    std::vector<FamilyKey> k;
    for (const auto& s : kSpecs)
      if (std::none_of(k.begin(), k.end(), [&](const FamilyKey& f) { return f.family == s.family; }))
        k.push_back(FamilyKey{tokenise(s.family), s.family});
    for (const auto& a : kFamilyAliases) k.push_back(FamilyKey{tokenise(a.spelling), a.family});
    return k;
  }();
  return keys;
}

bool is_digits(const std::string& s) { return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }); }
bool is_memory_unit(const std::string& s) { return s == "gb" || s == "g" || s == "gib"; }

// What a name says: a family and the qualifiers it carries.
struct NameParts {
  std::string_view family;
  double memory_gb = 0;    // 0: not said
  std::string_view form;   // empty: not said
};

enum class NameError { no_family, bad_qualifier };

Expected<NameParts, NameError> parse_name(std::string_view text) {
  const Tokens t = tokenise(text);
  const FamilyKey* best = nullptr;
  for (const auto& key : family_keys()) {
    if (key.tokens.empty() || key.tokens.size() > t.size()) continue;
    if (!std::equal(key.tokens.begin(), key.tokens.end(), t.begin())) continue;
    if (!best || key.tokens.size() > best->tokens.size()) best = &key;
  }
  if (!best) return Unexpected{NameError::no_family};
  NameParts p;
  p.family = best->family;
  for (size_t i = best->tokens.size(); i < t.size();) {
    const std::string& tok = t[i];
    const bool next_is_unit = i + 1 < t.size() && is_memory_unit(t[i + 1]);
    if (is_digits(tok) && next_is_unit) {
      int gb = 0;
      auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), gb);
      if (ec != std::errc() || gb <= 0 || gb > 100000) return Unexpected{NameError::bad_qualifier};
      p.memory_gb = gb;
      i += 2;
    } else if (tok == "sxm" || tok == "mega") {
      p.form = "SXM";
      ++i;
      // "SXM4": the socket generation, unless the number is a memory ("SXM-80GB").
      if (tok == "sxm" && i < t.size() && is_digits(t[i]) && !(i + 1 < t.size() && is_memory_unit(t[i + 1]))) ++i;
    } else if (tok == "pcie") {
      p.form = "PCIe";
      ++i;
    } else if (tok == "pci" && i + 1 < t.size() && t[i + 1] == "e") {  // "PCI-E"
      p.form = "PCIe";
      i += 2;
    } else if (tok == "nvl") {
      p.form = "NVL";
      ++i;
    } else if (tok == "hbm") {  // the memory type says nothing the rest does not
      ++i;
      if (i < t.size() && is_digits(t[i])) ++i;
      if (i < t.size() && t[i] == "e") ++i;
    } else {
      return Unexpected{NameError::bad_qualifier};
    }
  }
  return p;
}

// The rows of one family, in table order.
std::vector<const GpuSpec*> family_rows(std::string_view family) {
  std::vector<const GpuSpec*> rows;
  for (const auto& s : kSpecs)
    if (s.family == family) rows.push_back(&s);
  return rows;
}

std::string memory_text(double gb) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gGB", gb);
  return buf;
}

Error unknown_gpu(std::string_view text, const std::string& why) {
  std::string msg = "unknown GPU '" + std::string(trim(text)) + "'";
  if (!why.empty()) msg += ": " + why;
  const auto near = closest_gpu_names(text);
  if (!near.empty()) {
    msg += "; closest known names: ";
    for (size_t i = 0; i < near.size(); ++i) msg += (i ? ", " : "") + near[i];
  }
  msg += " (\"any\", \"cpu\" or a GPU model; `jobctl gpus` lists them)";
  return make_error(ErrorCode::invalid_argument, std::move(msg), "resources.gpu");
}

}  // namespace

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
  }
  return "fp32";
}

std::optional<Precision> parse_precision(std::string_view name) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
    if (to_string(p) == name) return p;
  return std::nullopt;
}

std::span<const GpuSpec> gpu_specs() { return kSpecs; }

const GpuSpec* identify_gpu(std::string_view name, double memory_gb) {
  auto parts = parse_name(name);
  if (!parts) return nullptr;
  std::vector<const GpuSpec*> rows = family_rows(parts->family);
  if (!parts->form.empty() &&
      std::any_of(rows.begin(), rows.end(), [&](const GpuSpec* s) { return s->form == parts->form; }))
    std::erase_if(rows, [&](const GpuSpec* s) { return s->form != parts->form; });
  // The memory the name says, else the one reported with it: the nearest variant (ties: the first).
  const double memory = parts->memory_gb > 0 ? parts->memory_gb : memory_gb;
  if (memory > 0) {
    const GpuSpec* best = rows.front();
    for (const GpuSpec* s : rows)
      if (std::abs(s->memory_gb - memory) < std::abs(best->memory_gb - memory)) best = s;
    return best;
  }
  return rows.front();
}

std::string canonical_gpu_name(std::string_view name, double memory_gb) {
  if (const GpuSpec* s = identify_gpu(name, memory_gb)) return std::string(s->name);
  return std::string(trim(name));
}

const GpuSpec* find_gpu(std::string_view name) { return identify_gpu(name); }

GpuSpec unknown_gpu_spec(std::string_view name, double memory_gb) {
  GpuSpec out;
  bool first = true;
  for (const GpuSpec& s : kSpecs) {
    if (s.family == "cpu") continue;
    if (first) {
      out = s;
      first = false;
      continue;
    }
    out.fp32_tflops = std::min(out.fp32_tflops, s.fp32_tflops);
    out.tf32_tflops = std::min(out.tf32_tflops, s.tf32_tflops);
    out.fp16_tflops = std::min(out.fp16_tflops, s.fp16_tflops);
    out.bf16_tflops = std::min(out.bf16_tflops, s.bf16_tflops);
    out.bandwidth_gbs = std::min(out.bandwidth_gbs, s.bandwidth_gbs);
    out.tdp_w = std::max(out.tdp_w, s.tdp_w);
  }
  out.name = name;
  out.family = name;
  out.form = {};
  out.memory_gb = memory_gb;
  out.source = "not in jobctl's GPU table: the table's least favourable figures (docs/cost-model.md, \"Unknown GPUs\")";
  return out;
}

bool GpuRequest::matches(const GpuSpec& gpu) const {
  switch (kind) {
    case Kind::any: return true;
    case Kind::cpu: return gpu.family == "cpu";
    case Kind::model:
      return gpu.family == family && (memory_gb <= 0 || gpu.memory_gb == memory_gb) &&
             (form.empty() || gpu.form == form);
  }
  return false;
}

std::string GpuRequest::name() const {
  switch (kind) {
    case Kind::any: return "any";
    case Kind::cpu: return "cpu";
    case Kind::model: break;
  }
  std::string s(family);
  if (memory_gb > 0) s += "-" + memory_text(memory_gb);
  if (!form.empty()) s += "-" + std::string(form);
  return s;
}

Expected<GpuRequest> parse_gpu_request(std::string_view text) {
  const std::string lower = to_lower(trim(text));
  GpuRequest r;
  if (lower == "any") return r;
  if (lower.empty()) return unknown_gpu(text, "empty");
  auto parts = parse_name(text);
  if (!parts) return unknown_gpu(text, "");
  if (parts->family == "cpu") {
    if (parts->memory_gb > 0 || !parts->form.empty()) return unknown_gpu(text, "\"cpu\" takes no qualifiers");
    r.kind = GpuRequest::Kind::cpu;
    return r;
  }
  r.kind = GpuRequest::Kind::model;
  r.family = parts->family;
  const auto rows = family_rows(parts->family);
  // A form factor the family is not sold in says nothing (a "V100-PCIe" is a V100).
  if (!parts->form.empty() && std::any_of(rows.begin(), rows.end(), [&](const GpuSpec* s) { return s->form == parts->form; }))
    r.form = parts->form;
  r.memory_gb = parts->memory_gb;
  // A memory the family has in one size only says nothing either.
  if (r.memory_gb > 0 && std::all_of(rows.begin(), rows.end(), [&](const GpuSpec* s) { return s->memory_gb == r.memory_gb; }))
    r.memory_gb = 0;
  if (std::none_of(rows.begin(), rows.end(), [&](const GpuSpec* s) { return r.matches(*s); })) {
    std::string sizes;
    for (const GpuSpec* s : rows)
      if (sizes.find(memory_text(s->memory_gb)) == std::string::npos)
        sizes += (sizes.empty() ? "" : ", ") + memory_text(s->memory_gb);
    return unknown_gpu(text, "no " + std::string(r.family) + (r.form.empty() ? "" : " " + std::string(r.form)) +
                                 " has " + memory_text(parts->memory_gb) + " (" + std::string(r.family) +
                                 " variants: " + sizes + ")");
  }
  return r;
}

std::vector<std::string> closest_gpu_names(std::string_view text, size_t n) {
  std::vector<std::string> names{"any", "cpu"};
  auto add = [&](std::string s) {
    if (std::find(names.begin(), names.end(), s) == names.end()) names.push_back(std::move(s));
  };
  for (const auto& s : kSpecs) {
    add(std::string(s.family));
    add(std::string(s.name));
    if (family_rows(s.family).size() > 1) add(std::string(s.family) + "-" + memory_text(s.memory_gb));
  }
  const std::string key = joined(tokenise(text));
  std::vector<std::pair<size_t, std::string>> scored;
  for (auto& name : names) scored.emplace_back(edit_distance(key, joined(tokenise(name))), std::move(name));
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < n; ++i) out.push_back(std::move(scored[i].second));
  return out;
}

double peak_tflops(const GpuSpec& gpu, Precision precision) {
  double v = 0;
  switch (precision) {
    case Precision::fp32: v = gpu.fp32_tflops; break;
    case Precision::tf32: v = gpu.tf32_tflops; break;
    case Precision::fp16: v = gpu.fp16_tflops; break;
    case Precision::bf16: v = gpu.bf16_tflops; break;
  }
  return std::max(v, gpu.fp32_tflops);
}

}  // namespace jobctl::cost
