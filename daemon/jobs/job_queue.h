// The queued jobs, in offer order, held in memory so that a lease needs no query: highest
// priority first, then oldest, then lowest id. It mirrors the jobs in state `queued` in the store
// (loaded at start, updated by commit hooks); the store stays the truth: a lease re-checks the
// job's state inside its transaction, so a stale entry costs one refused attempt, never a wrong
// state.
//
// Thread safety: none; JobService guards it with its mutex.
#pragma once

#include <cstdint>
#include <set>
#include <tuple>
#include <unordered_map>

#include "daemon/store/records.h"

namespace jobctl::daemon::jobs {

using QueuedJob = store::QueuedJobRow;

class JobQueue {
 public:
  struct Order {
    bool operator()(const QueuedJob& a, const QueuedJob& b) const {
      return std::make_tuple(-a.priority, a.created_ms, a.id) <
             std::make_tuple(-b.priority, b.created_ms, b.id);
    }
  };
  using Set = std::set<QueuedJob, Order>;

  void insert(const QueuedJob& job);  // replaces an entry with the same id
  bool erase(int64_t id);
  bool contains(int64_t id) const { return by_id_.count(id) != 0; }
  size_t size() const { return by_id_.size(); }
  bool empty() const { return by_id_.empty(); }
  // Offer order.
  Set::const_iterator begin() const { return jobs_.begin(); }
  Set::const_iterator end() const { return jobs_.end(); }

 private:
  Set jobs_;
  std::unordered_map<int64_t, Set::iterator> by_id_;
};

// Fills q.placement_* from a placed job's chosen candidate (left empty when it has none): what
// the matcher needs of the placement to offer the job only where it was placed.
void set_placement_fields(const store::JobRow& row, QueuedJob& q);

}  // namespace jobctl::daemon::jobs
