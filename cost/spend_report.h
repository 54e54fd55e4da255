// The spend report: what was spent per job, user or placement over a period, what
// the same work would have cost all on demand, and the savings. The daemon builds it from its
// ledger (GET /v1/reports/spend); `jobctl report spend` prints it as a table, CSV, JSON or SVG.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/expected.h"

namespace jobctl::cost {

// Savings compare only the time that has an on-demand equivalent (the same GPU model and count on
// demand); time on a GPU that no on-demand offer has is counted apart, never against another GPU.
struct SpendGroup {
  std::string key;            // "job 12", "alice", "spot", ...
  double seconds = 0;         // billed resource-seconds inside the period: each owned GPU's and each
                              // cloud instance's own (a 4-GPU lease's hour is 4 h)
  double usd = 0;             // spent
  double on_demand_usd = 0;   // the time that has an on-demand equivalent, all on demand
  double no_equivalent_usd = 0;  // spent on time with no on-demand equivalent (in usd, not compared)
  double compared_usd() const { return usd - no_equivalent_usd; }
  // False when none of the group's spend has an on-demand equivalent: its savings are unknown.
  bool has_equivalent() const { return on_demand_usd > 0 || compared_usd() > 1e-12; }
  double savings_usd() const { return on_demand_usd - compared_usd(); }
  double savings_fraction() const { return on_demand_usd > 0 ? savings_usd() / on_demand_usd : 0; }
};

struct SpendReport {
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  std::string group_by;       // job | user | placement
  std::vector<SpendGroup> groups;  // most spent first
  SpendGroup total;           // key "total"
};

// One ledger interval, for aggregation.
struct SpendInterval {
  int64_t start_ms = 0, end_ms = 0;
  double usd = 0, on_demand_usd = 0, billed_seconds = 0;
  bool has_equivalent = true;  // false: on_demand_usd means nothing (no on-demand equivalent)
  std::string key;
};

// Sums the intervals clipped to [from_ms, to_ms) (a straddling interval counts pro rata).
SpendReport aggregate_spend(const std::vector<SpendInterval>& intervals, int64_t from_ms, int64_t to_ms,
                            const std::string& group_by);

nlohmann::json to_json(const SpendReport& r);
[[nodiscard]] Expected<SpendReport> spend_report_from_json(const nlohmann::json& j);
std::string spend_csv(const SpendReport& r);
// A grouped bar chart: spent and all-on-demand per group.
std::string spend_svg(const SpendReport& r);

}  // namespace jobctl::cost
