// The webhook deliveries waiting to be sent, one queue per user (the webhook's owner), so that
// one user's slow or dead receivers hold up only that user's deliveries (docs/notifications.md,
// "Delivery"): take() hands out the next delivery of the user after the one it served last, and
// never more than `per_user` of one user's at once, so a user whose receivers hang occupies at
// most that many of the dispatcher's senders.
//
// A delivery is known from add() until done(): added again meanwhile (the store still has it
// pending), it is skipped; and so is one done after the store was read (snapshot()), which that
// read may still show pending.
//
// Ownership: a plain container. Thread safety: every member is safe from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "daemon/store/records.h"

namespace jobctl::daemon::notify {

class DeliveryQueues {
 public:
  explicit DeliveryQueues(int per_user) : per_user_(per_user) {}

  // Taken just before the store is read for add().
  uint64_t snapshot() const JOBCTL_EXCLUDES(mu_);
  // Queues the deliveries (read from the store after `snapshot`) neither known nor done since;
  // returns how many it queued. Wakes waiting takers.
  int add(std::vector<store::DueDelivery> due, uint64_t snapshot) JOBCTL_EXCLUDES(mu_);
  // The next delivery to send, by the rule above; nullopt when none may be sent now (with
  // `wait`: blocks until one may, or until stop()). The caller calls done() when it is sent.
  std::optional<store::DueDelivery> take(bool wait) JOBCTL_EXCLUDES(mu_);
  void done(const store::DueDelivery& d) JOBCTL_EXCLUDES(mu_);
  // Ends every wait; take() answers nullopt from now on.
  void stop() JOBCTL_EXCLUDES(mu_);
  // How long, at `now_ms`, the queued delivery (not yet taken) that is longest past its due time
  // has waited, in seconds; 0 when none waits.
  double lag_s(int64_t now_ms) const JOBCTL_EXCLUDES(mu_);

 private:
  // The user whose queued delivery goes next: the first after last_served_ (in name order,
  // wrapping round) below the per-user cap; nullopt: none.
  std::optional<std::string> next_user() const JOBCTL_REQUIRES(mu_);

  const int per_user_;
  mutable Mutex mu_;
  CondVar cv_;
  std::map<std::string, std::deque<store::DueDelivery>> queued_ JOBCTL_GUARDED_BY(mu_);
  std::map<std::string, int> sending_ JOBCTL_GUARDED_BY(mu_);  // per user, taken and not done
  std::set<int64_t> known_ JOBCTL_GUARDED_BY(mu_);             // delivery ids queued or taken
  uint64_t done_count_ JOBCTL_GUARDED_BY(mu_) = 0;
  std::map<int64_t, uint64_t> finished_ JOBCTL_GUARDED_BY(mu_);  // id -> done_count_ at its done()
  std::string last_served_ JOBCTL_GUARDED_BY(mu_);             // the round-robin's position
  bool stopped_ JOBCTL_GUARDED_BY(mu_) = false;
};

}  // namespace jobctl::daemon::notify
