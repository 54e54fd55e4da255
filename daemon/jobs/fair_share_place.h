// A waiting job's place in the fair-share order (docs/cost-model.md, "Fair share"), as the last
// placement pass computed it (placement/reservation_pass.h publishes every waiting job's place
// once per pass), and the words its wait reason and its reservation's reason give it: "fair
// share: 3rd of 12 in line (user bob's factor 0.420, priority 50, score 5420.0)". A request for a
// job's wait reads the published places; it never recomputes the order.
//
// Thread safety: FairSharePlaceBoard is safe from any thread (one mutex around a pointer swap);
// the rest are plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "base/mutex.h"

namespace jobctl::daemon::jobs {

struct FairSharePlace {
  int place = 0;   // 1: first
  int of = 0;      // the jobs in the order
  std::string user;
  double factor = 1;
  int priority = 50;
  double score = 0;
};

using FairSharePlaces = std::map<int64_t, FairSharePlace>;

// "1st", "2nd", "3rd", "4th", "11th", "21st", ...
std::string ordinal(int n);

// The words for `p`; they begin with kFairShareNotePrefix.
inline constexpr const char* kFairShareNotePrefix = "fair share: ";
std::string fair_share_note(const FairSharePlace& p);

// The places the last pass published (nullptr before any, or with fair share off).
class FairSharePlaceBoard {
 public:
  void publish(std::shared_ptr<const FairSharePlaces> places) JOBCTL_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    places_ = std::move(places);
  }
  std::shared_ptr<const FairSharePlaces> current() const JOBCTL_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return places_;
  }

 private:
  mutable Mutex mu_;
  std::shared_ptr<const FairSharePlaces> places_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::daemon::jobs
