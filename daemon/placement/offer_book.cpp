#include "daemon/placement/offer_book.h"

#include <algorithm>

namespace jobctl::daemon::placement {

void OfferBook::reset(std::vector<cost::Offer> offers) {
  MutexLock lock(mu_);
  offers_ = std::move(offers);
  ++generation_;
  ++catalog_generation_;
}

std::vector<cost::Offer> OfferBook::all() const {
  MutexLock lock(mu_);
  return offers_;
}

void OfferBook::set_aside(const std::string& instance_type, const std::string& region, bool spot, int64_t until_ms) {
  MutexLock lock(mu_);
  auto& until = set_aside_[Market{instance_type, region, spot}];
  until = std::max(until, until_ms);
  ++generation_;
}

OfferBook::Usable OfferBook::usable(int64_t now_ms) {
  MutexLock lock(mu_);
  if (std::erase_if(set_aside_, [now_ms](const auto& entry) { return entry.second <= now_ms; }) > 0) ++generation_;
  if (usable_.offers && usable_.generation == generation_) return usable_;
  auto offers = std::make_shared<std::vector<cost::Offer>>();
  offers->reserve(offers_.size());
  for (const auto& o : offers_) {
    if (set_aside_.count(Market{o.instance_type, o.region, false})) continue;  // the whole offer
    offers->push_back(o);
    if (set_aside_.count(Market{o.instance_type, o.region, true})) offers->back().spot_usd_per_hour.reset();
  }
  usable_ = Usable{std::move(offers), generation_, !set_aside_.empty(), catalog_generation_};
  return usable_;
}

std::optional<int64_t> OfferBook::set_aside_until(const std::string& instance_type, const std::string& region,
                                                  bool spot) const {
  MutexLock lock(mu_);
  std::optional<int64_t> until;
  // The whole offer, and for spot also its spot market.
  for (int market = 0; market <= (spot ? 1 : 0); ++market)
    if (auto at = set_aside_.find(Market{instance_type, region, market == 1}); at != set_aside_.end())
      until = std::max(until.value_or(at->second), at->second);
  return until;
}

}  // namespace jobctl::daemon::placement
