#include "daemon/ledger/ledger_report.h"

namespace jobctl::daemon::ledger {

Expected<cost::SpendReport> spend_report(Ledger& ledger, int64_t from_ms, int64_t to_ms, const std::string& group_by,
                                         const std::optional<std::string>& user) {
  if (group_by != "job" && group_by != "user" && group_by != "placement")
    return make_error(ErrorCode::invalid_argument, "group_by must be job, user or placement (got '" + group_by.substr(0, 40) + "')",
                      "group_by");
  if (to_ms <= from_ms) return make_error(ErrorCode::invalid_argument, "to must be after from", "to");
  auto rows = ledger.rows(from_ms, to_ms);
  if (!rows) return rows.error();
  std::vector<cost::SpendInterval> intervals;
  intervals.reserve(rows->size());
  for (const auto& r : *rows) {
    if (user && r.entry.user != *user) continue;
    cost::SpendInterval iv;
    iv.start_ms = r.entry.start_ms;
    iv.end_ms = r.entry.end_ms;
    iv.usd = r.usd;
    iv.on_demand_usd = r.on_demand_usd;
    iv.has_equivalent = ledger_row_has_on_demand_equivalent(r.usd, r.on_demand_usd);
    iv.billed_seconds = static_cast<double>(r.billed_seconds);
    if (group_by == "job")
      iv.key = r.entry.job_id > 0 ? "job " + std::to_string(r.entry.job_id) : "no job";
    else if (group_by == "user")
      iv.key = r.entry.user.empty() ? "(none)" : r.entry.user;
    else
      iv.key = r.entry.kind;
    intervals.push_back(std::move(iv));
  }
  return cost::aggregate_spend(intervals, from_ms, to_ms, group_by);
}

}  // namespace jobctl::daemon::ledger
