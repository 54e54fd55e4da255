// A bound on the price a job jumps to while cheaper offers cool down.
//
// An offer whose launch failed is set aside for a while (daemon/placement/offer_book.h). Without
// a bound, a job first placed on a $0.20/h spot offer whose launches failed would take whatever
// is left — an 8-GPU instance at $6/h — although the cheap offers come back minutes later. So a
// job placed in the cloud compares what it would pay with the offers it may choose now against
// what it would pay with every offer (its usual price): above max_ratio times that, and above
// the same offer on demand (spot's customary fallback, which the deadline policies weigh), it
// waits for the set-aside offer — its price is capped for this decision — where waiting still
// meets its deadline. A job with its own placement.max_usd_per_hour is bounded by that instead.
//
// Pure: decisions in, a ceiling out.
#pragma once

#include <optional>

#include "scheduler/job.h"
#include "scheduler/placement.h"

namespace jobctl::scheduler {

// The default of placement.max_price_jump: "many times its first price" starts at 3.
inline constexpr double kDefaultMaxPriceJump = 3.0;

// `usable`: place() over the offers the job may choose now; `every_offer`: place() over every
// offer, the set-aside ones included, and `every_offer_on_demand` its chosen offer's on-demand
// price; `cooling_hours`: until that offer comes back (0 when it is not set aside). The price
// ceiling that keeps the job from jumping (the larger of max_ratio x every_offer's price and
// every_offer_on_demand), or nullopt where it takes `usable`'s choice: not a cloud launch, within
// the ceiling, the job has a cap of its own, or waiting would miss its deadline.
std::optional<double> price_jump_ceiling(const Job& job, const PlacementDecision& usable,
                                         const PlacementDecision& every_offer, double every_offer_on_demand,
                                         double cooling_hours, double max_ratio);

}  // namespace jobctl::scheduler
