// Each user's decayed usage and fair-share factor, read from the ledger (docs/cost-model.md,
// "Fair share"): every ledger row with a user, over the last ten half-lives (older time counts
// under 0.1%), as price-weighted GPU-hours (scheduler/fair_share.h). The rows are read again at
// most once per `recompute_s`, not per job nor per pass: with 100k jobs queued a pass costs one
// lookup per job in the cached map.
//
// Ownership: borrows the store. Thread safety: every method is safe from any thread (one mutex,
// held while the ledger is read: at most once per recompute interval).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/expected.h"
#include "base/mutex.h"
#include "daemon/placement/placement_config.h"
#include "daemon/store/store.h"
#include "scheduler/fair_share.h"

namespace jobctl::daemon::placement {

class FairShareUsage {
 public:
  FairShareUsage(store::Store& store, PlacementSettings::FairShare settings)
      : store_(store), settings_(std::move(settings)) {}

  // Every user in `users` (the owners of open jobs), with a configured share or with usage, with
  // their factor at now_ms: shares are normalised over all of them. The usage is read again when
  // the last reading is older than recompute_s. Errors: the store's.
  Expected<std::map<std::string, scheduler::FairShareEntry>> factors(int64_t now_ms,
                                                                     const std::vector<std::string>& users)
      JOBCTL_EXCLUDES(mu_);
  const PlacementSettings::FairShare& settings() const { return settings_; }

 private:
  Status read_usage(int64_t now_ms) JOBCTL_REQUIRES(mu_);

  store::Store& store_;
  const PlacementSettings::FairShare settings_;
  Mutex mu_;
  int64_t read_ms_ JOBCTL_GUARDED_BY(mu_) = -1;
  std::map<std::string, double> usage_ JOBCTL_GUARDED_BY(mu_);  // user -> decayed usage at read_ms_
};

}  // namespace jobctl::daemon::placement
