// The queue of jobs waiting for placement, ordered by priority (higher first), then age (older
// first), then insertion order — the order the scheduler considers them in.
//
// Jobs are named by a caller-chosen 64-bit handle (the daemon's row id, the benchmark's index), so
// the queue stores no strings. push, erase and pop are O(log n); contains is O(1); iteration is in
// queue order.
//
// Thread safety: none; the owner serialises access.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>

namespace jobctl::scheduler {

class JobQueue {
 public:
  struct Entry {
    int priority = 0;
    int64_t submitted_ms = 0;
    uint64_t seq = 0;      // insertion order, breaks ties
    uint64_t handle = 0;
  };

 private:
  struct Order {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.priority != b.priority) return a.priority > b.priority;
      if (a.submitted_ms != b.submitted_ms) return a.submitted_ms < b.submitted_ms;
      return a.seq < b.seq;
    }
  };
  using Set = std::set<Entry, Order>;

 public:
  using const_iterator = Set::const_iterator;

  // False (and no change) when the handle is already queued.
  bool push(uint64_t handle, int priority, int64_t submitted_ms);
  // False when the handle is not queued.
  bool erase(uint64_t handle);
  bool contains(uint64_t handle) const { return index_.count(handle) != 0; }
  std::optional<Entry> top() const;
  std::optional<Entry> pop();
  size_t size() const { return set_.size(); }
  bool empty() const { return set_.empty(); }

  const_iterator begin() const { return set_.begin(); }
  const_iterator end() const { return set_.end(); }
  // The position of `handle` in queue order (end() when not queued), for a scheduler pass that
  // resumes where it stopped.
  const_iterator find(uint64_t handle) const;

 private:
  Set set_;
  std::unordered_map<uint64_t, Set::const_iterator> index_;
  uint64_t next_seq_ = 0;
};

}  // namespace jobctl::scheduler
