#include "daemon/placement/fair_share_usage.h"

#include <set>
#include <vector>

#include "daemon/ledger/ledger.h"

namespace jobctl::daemon::placement {

Expected<std::map<std::string, scheduler::FairShareEntry>> FairShareUsage::factors(
    int64_t now_ms, const std::vector<std::string>& users) {
  MutexLock lock(mu_);
  if (read_ms_ < 0 || now_ms - read_ms_ >= static_cast<int64_t>(settings_.recompute_s) * 1000) {
    if (auto st = read_usage(now_ms); !st) return st.error();
  }
  return scheduler::fair_share_factors(users, usage_, settings_.shares, settings_.default_share);
}

Status FairShareUsage::read_usage(int64_t now_ms) {
  const int64_t half_life_ms = static_cast<int64_t>(settings_.half_life_days * 86'400'000.0);
  ledger::Ledger ledger(store_);
  auto rows = ledger.rows(now_ms - 10 * half_life_ms, now_ms + 1);
  if (!rows) return rows.error();
  std::vector<scheduler::UsageInterval> intervals;
  intervals.reserve(rows->size());
  for (const auto& r : *rows) {
    if (r.entry.user.empty()) continue;
    // An open entry (a running lease) is read as ending now.
    const int64_t end = r.entry.open ? now_ms : r.entry.end_ms;
    intervals.push_back({r.entry.user, r.entry.start_ms, end, r.entry.usd_per_hour});
  }
  usage_ = scheduler::decayed_usage_by_user(intervals, now_ms, half_life_ms);
  read_ms_ = now_ms;
  return {};
}

}  // namespace jobctl::daemon::placement
