// The cost ledger (A's daemon/ledger/ledger.h) as the SpendSource of per-user budgets and as the
// source of the spend metric. One scan of the month's ledger rows gives every user's
// and every kind's total; it is cached for `cache_ms` so that a burst of submits reads the
// ledger once.
//
// Ownership: owns a Ledger over the borrowed Store. Thread safety: every method is safe from any
// thread (a mutex guards the cache; the scan runs on a reader connection).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/clock.h"
#include "base/mutex.h"
#include "daemon/auth/auth_admission.h"
#include "daemon/ledger/ledger.h"

namespace jobctl::daemon::auth {

class LedgerSpend : public SpendSource {
 public:
  LedgerSpend(store::Store& store, const Clock& clock, int64_t cache_ms = 5000)
      : ledger_(store), clock_(clock), cache_ms_(cache_ms) {}

  // The user's spend in [from_ms, to_ms): the month-to-date totals when from_ms is the start of
  // the current month (the budget check), else a fresh scan.
  Expected<double> spend_usd(const std::string& user, int64_t from_ms, int64_t to_ms) override;
  // This month's spend by kind ("local", "on_demand", "spot").
  Expected<std::map<std::string, double>> month_by_kind();

 private:
  struct Totals {
    int64_t computed_ms = -1;
    int64_t month_start_ms = 0;
    std::map<std::string, double> by_user, by_kind;
  };
  Expected<Totals> month_totals();

  ledger::Ledger ledger_;
  const Clock& clock_;
  int64_t cache_ms_;
  Mutex mu_;
  Totals cache_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::daemon::auth
