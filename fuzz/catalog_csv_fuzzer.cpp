// libFuzzer target: the price catalog CSV reader (cost/csv.h, cost/price_catalog.h) on arbitrary
// text. Properties: never crashes or trips a sanitizer; every offer it accepts has a name, a
// finite non-negative on-demand price and a region; every refusal names its line.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cost/csv.h"
#include "cost/price_catalog.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto rows = jobctl::cost::parse_csv(text);
  if (rows)
    for (const auto& r : *rows)
      if (r.line < 1) std::abort();
  auto catalog = jobctl::cost::parse_skypilot_csv(text, "aws", "fuzz");
  if (!catalog) {
    if (catalog.error().message.empty()) std::abort();
    return 0;
  }
  for (const auto& o : catalog->offers) {
    if (o.instance_type.empty()) std::abort();
    if (!std::isfinite(o.on_demand_usd_per_hour) || o.on_demand_usd_per_hour < 0) std::abort();
  }
  return 0;
}
