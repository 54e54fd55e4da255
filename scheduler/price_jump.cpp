#include "scheduler/price_jump.h"

#include <algorithm>

namespace jobctl::scheduler {

namespace {

bool launches(Outcome o) { return o == Outcome::launch_on_demand || o == Outcome::launch_spot; }

}  // namespace

std::optional<double> price_jump_ceiling(const Job& job, const PlacementDecision& usable,
                                         const PlacementDecision& every_offer, double every_offer_on_demand,
                                         double cooling_hours, double max_ratio) {
  if (job.max_usd_per_hour || max_ratio <= 0) return std::nullopt;
  if (!launches(usable.outcome) || !launches(every_offer.outcome) || cooling_hours <= 0) return std::nullopt;
  const double usual = every_offer.choice.usd_per_hour;
  if (usual <= 0) return std::nullopt;
  const double ceiling = std::max(max_ratio * usual, every_offer_on_demand);
  if (usable.choice.usd_per_hour <= ceiling) return std::nullopt;
  // Waiting out the cooldown and then running there must still meet the deadline.
  if (usable.deadline_left_hours && cooling_hours + every_offer.choice.completion_hours > *usable.deadline_left_hours)
    return std::nullopt;
  return ceiling;
}

}  // namespace jobctl::scheduler
