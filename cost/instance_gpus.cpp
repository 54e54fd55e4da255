#include "cost/instance_gpus.h"

#include <array>

namespace jobctl::cost {

namespace {

// An instance type matches when it starts with `prefix` and contains `part` after it.
struct Rule {
  std::string_view cloud;
  std::string_view prefix;
  std::string_view part;
  InstanceGpuFact fact;
};

constexpr std::string_view kLambda = "Lambda Cloud instance types (lambdalabs.com, GPU cloud pricing)";
constexpr std::string_view kAzureNcH100 = "Azure NC H100 v5 series documentation (H100 NVL 94 GB)";
constexpr std::string_view kAzureNdH100 = "Azure ND H100 v5 series documentation (8 x H100 SXM 80 GB)";
constexpr std::string_view kAzureNcA100 = "Azure NC A100 v4 series documentation (A100 80 GB PCIe)";
constexpr std::string_view kAzureNdA100 = "Azure ND A100 v4 / NDm A100 v4 series documentation (A100 SXM)";

// First match wins: the more specific rules come first.
constexpr std::array kRules{
    Rule{"lambda", "gpu_", "_h100_pcie", {"H100-PCIe", 0, kLambda}},
    Rule{"lambda", "gpu_", "_h100_sxm5", {"H100-SXM", 0, kLambda}},
    Rule{"lambda", "gpu_", "_a100_80gb_sxm4", {"A100-80GB-SXM", 0, kLambda}},
    Rule{"lambda", "gpu_", "_a100_sxm4", {"A100-40GB-SXM", 0, kLambda}},
    Rule{"lambda", "gpu_8x_a100", "", {"A100-40GB-SXM", 0, kLambda}},
    Rule{"lambda", "gpu_", "_a100", {"A100-40GB-PCIe", 0, kLambda}},
    Rule{"azure", "Standard_ND96isr_H100_v5", "", {"H100-SXM", 8, kAzureNdH100}},
    Rule{"azure", "Standard_NC", "_H100_v5", {"H100-NVL", 0, kAzureNcH100}},
    Rule{"azure", "Standard_NC", "_A100_v4", {"A100-80GB-PCIe", 0, kAzureNcA100}},
    Rule{"azure", "Standard_ND96amsr_A100_v4", "", {"A100-80GB-SXM", 0, kAzureNdA100}},
    Rule{"azure", "Standard_ND96asr_v4", "", {"A100-40GB-SXM", 0, kAzureNdA100}},
};

}  // namespace

std::optional<InstanceGpuFact> instance_gpu_fact(std::string_view cloud, std::string_view instance_type) {
  for (const Rule& r : kRules) {
    if (r.cloud != cloud || !instance_type.starts_with(r.prefix)) continue;
    if (!r.part.empty() && instance_type.substr(r.prefix.size()).find(r.part) == std::string_view::npos) continue;
    return r.fact;
  }
  return std::nullopt;
}

}  // namespace jobctl::cost
