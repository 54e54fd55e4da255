// The spend report from the ledger (GET /v1/reports/spend): rows overlapping the period, grouped
// by job ("job <id>", "no job" for idle instance time), user ("" shows as "(none)") or placement
// (the ledger kind: local, on_demand, spot), each clipped to the period pro rata.
//
// Thread safety: as Ledger.
#pragma once

#include <optional>
#include <string>

#include "cost/spend_report.h"
#include "daemon/ledger/ledger.h"

namespace jobctl::daemon::ledger {

// `user`: only the ledger rows billed to this user (a user's own view; their jobs' time). None:
// every row. Errors: invalid_argument naming "group_by" or "to" (to <= from).
Expected<cost::SpendReport> spend_report(Ledger& ledger, int64_t from_ms, int64_t to_ms, const std::string& group_by,
                                         const std::optional<std::string>& user = std::nullopt);

}  // namespace jobctl::daemon::ledger
