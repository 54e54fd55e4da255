// Where a job ran and what each stretch cost: its ledger rows folded into segments, one per
// machine and uninterrupted stretch (an owned worker's GPUs of one lease are one segment; an
// instance's rows that follow each other are one), with the all-on-demand price of the same time
// beside each, so that what moves and spot saved is plain (docs/api.md, "The job object").
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/store/records.h"

namespace jobctl::daemon::ledger {

struct JobSegment {
  std::string where;        // "local:<worker id>" or "instance:<id>"
  std::string kind;         // local | on_demand | spot
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  int64_t billed_seconds = 0;  // summed over the machine's GPUs for an owned multi-GPU lease
  double usd = 0;
  double on_demand_usd = 0;  // the same time on the on-demand price the rows name
  bool open = false;         // still running (billed up to now)
  // False: the rows have no on-demand equivalent (no offer of the GPU model): on_demand_usd is 0
  // and means nothing.
  bool has_equivalent = true;
};

struct JobCost {
  std::vector<JobSegment> segments;  // in start order
  double usd = 0;
  double on_demand_usd = 0;      // of the time with an on-demand equivalent
  double no_equivalent_usd = 0;  // spent on time with none
  bool has_equivalent() const { return on_demand_usd > 0 || usd - no_equivalent_usd > 1e-12; }
  double saved_usd() const { return on_demand_usd - (usd - no_equivalent_usd); }
};

// `rows`: one job's ledger rows in start order (store::Store::ledger_rows_of_job).
JobCost job_cost(const std::vector<store::LedgerRecord>& rows);

}  // namespace jobctl::daemon::ledger
