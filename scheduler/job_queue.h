// The queue of jobs waiting to run, in the order they are considered: higher priority first,
// then older (earlier submission) first, then lower id. The daemon keeps its queued and placed
// jobs in one (daemon/jobs/job_queue.h: JobQueue<QueuedJob>), the placement benchmark its
// simulated backlog.
//
// An item is any value type; `KeyOf` reads its QueueKey (id, priority, submission time), which
// must not change while the item is queued (insert it again to change it). Ids are unique: an
// insert replaces the item queued under the same id. insert, erase and pop are O(log n); contains
// and find are O(1); iteration is in queue order and yields the items.
//
// Thread safety: none; the owner serialises access.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace jobctl::scheduler {

struct QueueKey {
  int64_t id = 0;
  int priority = 0;
  int64_t submitted_ms = 0;
};

// True when `a` comes before `b`.
inline bool queued_before(const QueueKey& a, const QueueKey& b) {
  return std::make_tuple(-static_cast<int64_t>(a.priority), a.submitted_ms, a.id) <
         std::make_tuple(-static_cast<int64_t>(b.priority), b.submitted_ms, b.id);
}

template <class Item, class KeyOf>
class JobQueue {
  struct Order {
    bool operator()(const Item& a, const Item& b) const { return queued_before(KeyOf{}(a), KeyOf{}(b)); }
  };
  using Set = std::set<Item, Order>;

 public:
  using const_iterator = typename Set::const_iterator;

  // Queues `item`; an item with the same id leaves first. True when the id was not queued.
  bool insert(Item item) {
    const int64_t id = KeyOf{}(item).id;
    const bool added = !erase(id);
    by_id_[id] = items_.insert(std::move(item)).first;
    return added;
  }
  // False when the id is not queued.
  bool erase(int64_t id) {
    auto found = by_id_.find(id);
    if (found == by_id_.end()) return false;
    items_.erase(found->second);
    by_id_.erase(found);
    return true;
  }
  bool contains(int64_t id) const { return by_id_.count(id) != 0; }
  // The item's position in queue order (end() when not queued), e.g. for a pass that resumes where
  // it stopped.
  const_iterator find(int64_t id) const {
    auto found = by_id_.find(id);
    return found == by_id_.end() ? items_.end() : found->second;
  }
  // The first item in queue order, taken out of the queue.
  std::optional<Item> pop() {
    if (items_.empty()) return std::nullopt;
    Item first = *items_.begin();
    erase(KeyOf{}(first).id);
    return first;
  }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }

 private:
  Set items_;
  std::unordered_map<int64_t, const_iterator> by_id_;
};

}  // namespace jobctl::scheduler
