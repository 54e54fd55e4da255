// What price catalogs leave out or get wrong about an instance type's GPUs, from the clouds' own
// documentation of the instance type:
//  - the variant, where a catalog names only the family: Lambda lists gpu_1x_h100_pcie as "H100"
//    (an H100 PCIe: 51 FP32 TFLOPS, not the SXM's 67), Azure's NC H100 v5 as "H100" (an H100 NVL,
//    94 GB), Azure's NC A100 v4 as "A100-80GB" (the PCIe card);
//  - the count, where a catalog is wrong: Azure's Standard_ND96isr_H100_v5 is listed with 12 H100,
//    the machine has 8.
// The catalog reader (price_catalog.h) applies these before identifying the GPU.
//
// Thread safety: pure function over a built-in table.
#pragma once

#include <optional>
#include <string_view>

namespace jobctl::cost {

struct InstanceGpuFact {
  std::string_view gpu;     // a GPU name identify_gpu reads ("H100-PCIe"); empty: the catalog's
  int gpu_count = 0;        // 0: the catalog's
  std::string_view source;  // where the fact comes from
};

// The fact for an instance type of a cloud (lower-case cloud name, the catalog's instance type),
// or nullopt when the catalog is taken as it is.
std::optional<InstanceGpuFact> instance_gpu_fact(std::string_view cloud, std::string_view instance_type);

}  // namespace jobctl::cost
