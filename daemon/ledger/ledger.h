// The cost ledger: what every resource cost, per second, per job.
//
// Writers: the provisioner (cloud instance time: boot, idle and checkpoint transfer included) and
// the lease ledger (owned GPU time, one lease at a time, written at the lease's own events:
// lease_ledger.h). Readers: the spend report (`GET /v1/reports/spend`, `jobctl report spend`, see
// ledger_report.h), per-user budgets and the spend metric (auth/auth_budget_ledger.h).
//
// An entry is an interval [start_ms, end_ms) of one resource at one hourly price. Billing is per
// second: the interval's length is rounded up to whole seconds, cost = seconds * usd_per_hour /
// 3600. An entry is identified by (resource, start_ms): accruing again with the same pair
// replaces the earlier entry, so an interval can be extended as time passes and a retry after a
// crash never counts twice. An open entry (a lease that has not ended) is read as ending now.
//
// Each entry also records what the same time would have cost on demand (the spend report's
// "all on-demand" column): `on_demand_usd_per_hour` when the caller gives it (> 0); otherwise
// the ledger takes it from the job's placement (ledger_on_demand_reference: the same GPU model and
// count on demand), and for kind "on_demand" it is usd_per_hour itself. When none of these is
// known it stays 0: the time has no on-demand equivalent, and the reports say so instead of
// comparing it with another GPU's price.
//
// Ownership and thread safety: a Ledger borrows the Store (which must outlive it) and holds no
// other state; every method is safe from any thread except the store's writer thread (use
// accrue_in from inside a store change instead).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/expected.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::ledger {

struct LedgerEntry {
  int64_t job_id = 0;       // 0 = no job (an idle or booting instance)
  std::string resource;     // "instance:<id>", "local:<worker id>:gpu<k>" or "local:<worker id>:cpu"
  std::string kind;         // "local" | "on_demand" | "spot"
  int64_t start_ms = 0;
  int64_t end_ms = 0;       // >= start_ms
  double usd_per_hour = 0;  // >= 0
  std::string user;         // who the job belongs to ("" when none/unknown)
  double on_demand_usd_per_hour = 0;  // optional: 0 = let the ledger work it out (see above);
                                      // stored 0 = no on-demand equivalent
  // Open: the interval has begun and not ended (a running lease). Stored with end_ms = start_ms
  // and read as ending now; accruing it again closed (same resource and start) ends it.
  bool open = false;
};

// One stored row, with its billed figures.
struct LedgerRow {
  LedgerEntry entry;
  int64_t billed_seconds = 0;  // ceil((end_ms - start_ms) / 1000)
  double usd = 0;              // billed_seconds * usd_per_hour / 3600
  double on_demand_usd = 0;    // billed_seconds * on_demand_usd_per_hour / 3600
};

class Ledger {
 public:
  explicit Ledger(store::Store& store) : store_(store) {}

  // Validates and stores (or replaces, same resource and start_ms) one entry. Errors:
  // invalid_argument (empty resource, unknown kind, end < start, negative price), or the store's.
  Status accrue(LedgerEntry entry);
  // The same, inside a store change (on the writer thread); commits with the change.
  static Status accrue_in(store::WriteTxn& txn, LedgerEntry entry);

  // Rows overlapping [from_ms, to_ms), start order. Rows are returned whole (not clipped).
  Expected<std::vector<LedgerRow>> rows(int64_t from_ms, int64_t to_ms);
  // The total billed for one job so far.
  Expected<double> job_total_usd(int64_t job_id);

 private:
  store::Store& store_;
};

// What one hour of a job's chosen resource would cost on demand: the cheapest on-demand offer of
// the chosen GPU model in its placement document, per GPU-hour, times the GPUs the job takes.
// nullopt when no offer has that GPU (or the job takes none): no on-demand equivalent. The ledger
// uses it when an entry names no reference; callers accruing the same job often compute it once.
std::optional<double> ledger_on_demand_reference(const std::string& placement_json);

// Whether a stored row's time has an on-demand equivalent: a row that cost something and is worth
// nothing on demand has none (its reference was stored as 0).
inline bool ledger_row_has_on_demand_equivalent(double usd, double on_demand_usd) {
  return !(usd > 0 && on_demand_usd <= 0);
}

// Whom a job's spend is booked to: the owner of the token that submitted it, else (no auth) the
// spec's optional "user", else "".
std::string ledger_user(store::Store& store, int64_t job_id);
// The same inside a store change (on the writer thread), for a job read in it. Errors: the store's.
Expected<std::string> ledger_user_in(store::WriteTxn& txn, const store::JobRow& job);

// Checks an entry's fields; the first problem names its field ("ledger.kind", ...).
Status validate_ledger_entry(const LedgerEntry& e);
// ceil((end - start) / 1000 s), never negative.
int64_t billed_seconds(int64_t start_ms, int64_t end_ms);

}  // namespace jobctl::daemon::ledger
