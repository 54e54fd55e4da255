#include "daemon/auth/auth_budget_ledger.h"

#include <algorithm>

namespace jobctl::daemon::auth {

namespace {

// The part of a row's billed cost inside [from, to): rows are billed per second over their whole
// interval, so a row that straddles the month's start counts in proportion.
double cost_within(const ledger::LedgerRow& r, int64_t from, int64_t to) {
  const int64_t s = r.entry.start_ms, e = r.entry.end_ms;
  if (e <= s) return (s >= from && s < to) ? r.usd : 0.0;
  const int64_t lo = std::max(s, from), hi = std::min(e, to);
  if (hi <= lo) return 0.0;
  return r.usd * static_cast<double>(hi - lo) / static_cast<double>(e - s);
}

}  // namespace

Expected<LedgerSpend::Totals> LedgerSpend::month_totals() {
  const int64_t now = clock_.now_ms();
  const int64_t month = month_start_ms(now);
  {
    MutexLock lock(mu_);
    if (cache_.computed_ms >= 0 && cache_.month_start_ms == month && now - cache_.computed_ms < cache_ms_)
      return cache_;
  }
  auto rows = ledger_.rows(month, now + 1);
  if (!rows) return rows.error();
  Totals t;
  t.computed_ms = now;
  t.month_start_ms = month;
  for (const ledger::LedgerRow& r : *rows) {
    const double usd = cost_within(r, month, now + 1);
    t.by_user[r.entry.user] += usd;
    t.by_kind[r.entry.kind] += usd;
  }
  MutexLock lock(mu_);
  cache_ = t;
  return t;
}

Expected<double> LedgerSpend::spend_usd(const std::string& user, int64_t from_ms, int64_t to_ms) {
  if (from_ms == month_start_ms(clock_.now_ms())) {
    auto t = month_totals();
    if (!t) return t.error();
    auto it = t->by_user.find(user);
    return it == t->by_user.end() ? 0.0 : it->second;
  }
  auto rows = ledger_.rows(from_ms, to_ms);
  if (!rows) return rows.error();
  double sum = 0;
  for (const ledger::LedgerRow& r : *rows)
    if (r.entry.user == user) sum += cost_within(r, from_ms, to_ms);
  return sum;
}

Expected<std::map<std::string, double>> LedgerSpend::month_by_kind() {
  auto t = month_totals();
  if (!t) return t.error();
  return t->by_kind;
}

}  // namespace jobctl::daemon::auth
