#include "cost/catalog_cloud.h"

#include <cctype>
#include <map>

#include "base/strings.h"
#include "cost/csv.h"

namespace jobctl::cost {

namespace {

bool digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool alnum(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) return false;
  return true;
}

// "gpu_8x_" / "cpu_4x_"
bool lambda_shape(std::string_view t) {
  if (!(t.starts_with("gpu_") || t.starts_with("cpu_"))) return false;
  t.remove_prefix(4);
  const size_t x = t.find("x_");
  return x != std::string_view::npos && digits(t.substr(0, x));
}

// "p3.2xlarge", "g4dn.metal": letters and digits, one dot, letters and digits.
bool aws_shape(std::string_view t) {
  const size_t dot = t.find('.');
  if (dot == std::string_view::npos || t.find('.', dot + 1) != std::string_view::npos) return false;
  return alnum(t.substr(0, dot)) && alnum(t.substr(dot + 1));
}

// "a2-highgpu-1g", "n1-standard-8", "g2-standard-24": three dash-separated lower-case parts.
bool gcp_shape(std::string_view t) {
  const size_t a = t.find('-');
  if (a == std::string_view::npos) return false;
  const size_t b = t.find('-', a + 1);
  if (b == std::string_view::npos || t.find('-', b + 1) != std::string_view::npos) return false;
  for (char c : t)
    if (std::isupper(static_cast<unsigned char>(c)) || c == '_' || c == '.') return false;
  std::string_view last = t.substr(b + 1);
  if (!last.empty() && last.back() == 'g') last.remove_suffix(1);
  return digits(last);
}

// GCP zones: "us-central1-a" (a region ending in a digit, then one letter).
bool gcp_zone(std::string_view z) {
  return z.size() > 3 && z[z.size() - 2] == '-' && std::islower(static_cast<unsigned char>(z.back())) &&
         std::isdigit(static_cast<unsigned char>(z[z.size() - 3]));
}

}  // namespace

std::optional<std::string> cloud_of_row(std::string_view instance_type, std::string_view zone) {
  instance_type = trim(instance_type);
  if (instance_type.starts_with("Standard_")) return "azure";
  if (lambda_shape(instance_type)) return "lambda";
  if (aws_shape(instance_type)) return "aws";
  if (gcp_shape(instance_type)) return "gcp";
  if (instance_type.empty() && gcp_zone(trim(zone))) return "gcp";
  return std::nullopt;
}

std::optional<std::string> cloud_from_catalog_content(std::string_view csv_text) {
  auto rows = parse_csv(csv_text);
  if (!rows || rows->empty()) return std::nullopt;
  std::map<std::string, size_t> col;
  const auto& header = rows->front().fields;
  for (size_t i = 0; i < header.size(); ++i) col.emplace(to_lower(trim(header[i])), i);
  auto field = [&](const CsvRow& r, const char* name) -> std::string_view {
    auto it = col.find(name);
    return it != col.end() && it->second < r.fields.size() ? trim(r.fields[it->second]) : std::string_view{};
  };
  std::map<std::string, size_t> votes;
  for (size_t i = 1; i < rows->size(); ++i) {
    const CsvRow& r = (*rows)[i];
    if (auto cloud = field(r, "cloud"); !cloud.empty()) {
      ++votes[to_lower(cloud)];
      continue;
    }
    if (auto c = cloud_of_row(field(r, "instancetype"), field(r, "availabilityzone"))) ++votes[*c];
  }
  std::optional<std::string> best;
  size_t most = 0;
  for (const auto& [cloud, n] : votes)
    if (n > most) {
      most = n;
      best = cloud;
    }
  return best;
}

}  // namespace jobctl::cost
