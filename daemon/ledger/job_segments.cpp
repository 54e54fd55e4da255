#include "daemon/ledger/job_segments.h"

#include <algorithm>

#include "daemon/ledger/ledger.h"

namespace jobctl::daemon::ledger {

namespace {

// "local:3:gpu1" -> "local:3"; "instance:i-9" stays.
std::string machine_of(const std::string& resource) {
  if (resource.rfind("local:", 0) != 0) return resource;
  const auto last = resource.rfind(':');
  return last > 5 ? resource.substr(0, last) : resource;
}

}  // namespace

JobCost job_cost(const std::vector<store::LedgerRecord>& rows) {
  JobCost out;
  for (const auto& r : rows) {
    const std::string where = machine_of(r.resource);
    // Rows of the same machine that overlap or follow each other are one stretch of it.
    JobSegment* seg = nullptr;
    for (auto it = out.segments.rbegin(); it != out.segments.rend(); ++it)
      if (it->where == where && it->kind == r.kind && r.start_ms <= it->end_ms) {
        seg = &*it;
        break;
      }
    const bool equivalent = ledger_row_has_on_demand_equivalent(r.usd, r.on_demand_usd);
    if (!seg) {
      out.segments.push_back(JobSegment{where, r.kind, r.start_ms, r.end_ms, 0, 0, 0, false, equivalent});
      seg = &out.segments.back();
    }
    seg->end_ms = std::max(seg->end_ms, r.end_ms);
    seg->billed_seconds += r.billed_seconds;
    seg->usd += r.usd;
    seg->on_demand_usd += r.on_demand_usd;
    seg->open = seg->open || r.open;
    seg->has_equivalent = seg->has_equivalent && equivalent;
    out.usd += r.usd;
    out.on_demand_usd += r.on_demand_usd;
    if (!equivalent) out.no_equivalent_usd += r.usd;
  }
  return out;
}

}  // namespace jobctl::daemon::ledger
