// The catalog offers placement may choose, and the markets set aside after a failed launch.
//
// The offers are loaded at start (placement_config.h, load_offers). When the provisioner cannot
// launch an offer (no capacity, a refused request) it sets it aside until a given time: its spot
// market for a spot launch, the whole offer for an on-demand one. usable() is what placement may
// choose from now, with a generation that changes whenever that set changes (an offer set aside,
// or back), so that a pass can tell whether the inputs of an unplaceable job changed.
//
// Ownership and thread safety: owns its offers; every method is safe from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "base/mutex.h"
#include "cost/price_catalog.h"

namespace jobctl::daemon::placement {

class OfferBook {
 public:
  struct Usable {
    std::shared_ptr<const std::vector<cost::Offer>> offers;  // spot price cleared where set aside
    uint64_t generation = 0;
    bool any_set_aside = false;  // offers differs from all()
    uint64_t catalog_generation = 0;  // changes only when the offers are replaced (reset)
  };

  // Replaces the offers (start-up).
  void reset(std::vector<cost::Offer> offers) JOBCTL_EXCLUDES(mu_);
  // Every loaded offer, set aside or not.
  std::vector<cost::Offer> all() const JOBCTL_EXCLUDES(mu_);
  // Leaves the offer out until `until_ms` on the steady clock (a later time extends it): for spot
  // only its spot market, for on-demand the whole offer. A cooldown, so never wall-clock time.
  void set_aside(const std::string& instance_type, const std::string& region, bool spot, int64_t until_ms)
      JOBCTL_EXCLUDES(mu_);
  // What placement may choose from at `now_ms`, steady clock (set-asides whose time has come are
  // dropped first).
  Usable usable(int64_t now_ms) JOBCTL_EXCLUDES(mu_);
  // Until when (steady clock) the market is set aside — for spot, its spot market or the whole
  // offer; nullopt when it is not.
  std::optional<int64_t> set_aside_until(const std::string& instance_type, const std::string& region, bool spot) const
      JOBCTL_EXCLUDES(mu_);

 private:
  using Market = std::tuple<std::string, std::string, bool>;  // instance type, region, spot

  mutable Mutex mu_;
  std::vector<cost::Offer> offers_ JOBCTL_GUARDED_BY(mu_);
  std::map<Market, int64_t> set_aside_ JOBCTL_GUARDED_BY(mu_);  // -> until (ms)
  uint64_t generation_ JOBCTL_GUARDED_BY(mu_) = 1;
  uint64_t catalog_generation_ JOBCTL_GUARDED_BY(mu_) = 1;
  Usable usable_ JOBCTL_GUARDED_BY(mu_);  // for generation_ once built
};

}  // namespace jobctl::daemon::placement
