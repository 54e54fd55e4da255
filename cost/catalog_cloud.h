// Which cloud a price catalog's rows are from, read from its content rather than its file name
// (SkyPilot's own layout names every file vms.csv; a renamed file must not turn GCP into "cpu"
// rows). A "Cloud" column decides per row; otherwise the shape of the instance types and regions:
//   azure   instance types "Standard_..."                       (Standard_NC24ads_A100_v4)
//   lambda  instance types "gpu_<n>x_..." or "cpu_<n>x_..."      (gpu_1x_a100, cpu_4x_general)
//   aws     instance types "<family>.<size>"                     (p3.2xlarge, g5.xlarge)
//   gcp     instance types "<series>-<kind>-<n>[g]" or GPU price rows with no instance type and a
//           zone "<region>-<letter>"                             (a2-highgpu-1g, n1-standard-8)
// Each row votes; the cloud with most votes wins; no vote: nullopt.
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace jobctl::cost {

// The cloud of one row from its instance type and zone (either may be empty); nullopt: unknown.
std::optional<std::string> cloud_of_row(std::string_view instance_type, std::string_view zone);

// The cloud of a whole catalog text (SkyPilot format; a Cloud column wins); nullopt when the
// content does not tell (then the caller may fall back to the file name).
std::optional<std::string> cloud_from_catalog_content(std::string_view csv_text);

}  // namespace jobctl::cost
