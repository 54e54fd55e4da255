#include "daemon/notify/delivery_queues.h"

#include <algorithm>
#include <utility>

namespace jobctl::daemon::notify {

uint64_t DeliveryQueues::snapshot() const {
  MutexLock lock(mu_);
  return done_count_;
}

int DeliveryQueues::add(std::vector<store::DueDelivery> due, uint64_t snapshot) {
  int added = 0;
  {
    MutexLock lock(mu_);
    for (store::DueDelivery& d : due) {
      if (auto f = finished_.find(d.delivery.id); f != finished_.end() && f->second > snapshot) continue;
      if (!known_.insert(d.delivery.id).second) continue;
      const std::string owner = d.webhook.owner;
      queued_[owner].push_back(std::move(d));
      ++added;
    }
    // Those done before this read: the store showed their new state.
    std::erase_if(finished_, [snapshot](const auto& f) { return f.second <= snapshot; });
  }
  if (added > 0) cv_.signal_all();
  return added;
}

std::optional<store::DueDelivery> DeliveryQueues::take(bool wait) {
  MutexLock lock(mu_);
  for (;;) {
    if (stopped_) return std::nullopt;
    if (std::optional<std::string> user = next_user()) {
      auto& queue = queued_[*user];
      store::DueDelivery d = std::move(queue.front());
      queue.pop_front();
      if (queue.empty()) queued_.erase(*user);
      ++sending_[*user];
      last_served_ = *user;
      return d;
    }
    if (!wait) return std::nullopt;
    cv_.wait(mu_);
  }
}

std::optional<std::string> DeliveryQueues::next_user() const {
  // The users after the last one served, in name order, then round from the first.
  const auto after = queued_.upper_bound(last_served_);
  for (int pass = 0; pass < 2; ++pass) {
    for (auto it = pass == 0 ? after : queued_.begin(); it != (pass == 0 ? queued_.end() : after); ++it) {
      const auto s = sending_.find(it->first);
      if (s == sending_.end() || s->second < per_user_) return it->first;
    }
  }
  return std::nullopt;
}

void DeliveryQueues::done(const store::DueDelivery& d) {
  {
    MutexLock lock(mu_);
    known_.erase(d.delivery.id);
    finished_[d.delivery.id] = ++done_count_;
    auto it = sending_.find(d.webhook.owner);
    if (it != sending_.end() && --it->second <= 0) sending_.erase(it);
  }
  cv_.signal_all();  // the user may be under their cap again
}

void DeliveryQueues::stop() {
  {
    MutexLock lock(mu_);
    stopped_ = true;
  }
  cv_.signal_all();
}

double DeliveryQueues::lag_s(int64_t now_ms) const {
  MutexLock lock(mu_);
  int64_t oldest_due = now_ms;
  for (const auto& [user, queue] : queued_)
    for (const store::DueDelivery& d : queue) oldest_due = std::min(oldest_due, d.delivery.next_attempt_ms);
  return static_cast<double>(now_ms - oldest_due) / 1000.0;
}

}  // namespace jobctl::daemon::notify
