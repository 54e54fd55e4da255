#include "daemon/jobs/fair_share_place.h"

#include <cstdio>

namespace jobctl::daemon::jobs {

std::string ordinal(int n) {
  const int tens = n % 100;
  const char* suffix = "th";
  if (tens < 11 || tens > 13) {
    if (n % 10 == 1) suffix = "st";
    else if (n % 10 == 2) suffix = "nd";
    else if (n % 10 == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

std::string fair_share_note(const FairSharePlace& p) {
  char figures[120];
  std::snprintf(figures, sizeof figures, "factor %.3f, priority %d, score %.1f)", p.factor, p.priority, p.score);
  return kFairShareNotePrefix + ordinal(p.place) + " of " + std::to_string(p.of) + " in line (user " +
         (p.user.empty() ? std::string("(none)") : p.user) + "'s " + figures;
}

}  // namespace jobctl::daemon::jobs
