// libFuzzer target: the job spec parser and validator (train/spec/job_spec.h) on arbitrary text.
// Properties: never crashes or trips a sanitizer; a spec that parses has a canonical form that
// parses again to the same spec and prints identically (the daemon stores that form).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "train/spec/job_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = jobctl::train::parse_job_spec(text);
  if (!spec) {
    if (spec.error().message.empty()) std::abort();  // every refusal says why
    return 0;
  }
  const std::string canonical = jobctl::train::to_json(*spec);
  auto again = jobctl::train::parse_job_spec(canonical);
  if (!again || !(*again == *spec)) std::abort();
  if (jobctl::train::to_json(*again) != canonical) std::abort();
  return 0;
}
